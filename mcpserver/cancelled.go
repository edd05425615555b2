package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP specification (cancellation) says that a receiver of
// notifications/cancelled should not send a response for the cancelled
// request. The SDK (v1.8) cancels the handler's context but still writes
// what the handler returns, so both transports drop it: lineConn over
// stdio, and cancelFilter over streamable HTTP.

// cancelKey is a request of an MCP session ("" over stdio).
type cancelKey struct {
	session string
	id      jsonrpc.ID
}

// cancelledSet are the requests their clients cancelled that have not
// been answered yet.
type cancelledSet struct {
	mu  sync.Mutex
	ids map[cancelKey]bool
}

func newCancelledSet() *cancelledSet { return &cancelledSet{ids: map[cancelKey]bool{}} }

// note records the request a notifications/cancelled's params name.
func (c *cancelledSet) note(session string, params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	c.mu.Lock()
	c.ids[cancelKey{session, id}] = true
	c.mu.Unlock()
}

// take reports whether id of session was cancelled, and forgets it.
func (c *cancelledSet) take(session string, id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cancelKey{session, id}
	if !c.ids[k] {
		return false
	}
	delete(c.ids, k)
	return true
}

// peekPOST reads the body of a POST to /mcp (and puts it back): a
// notifications/cancelled is noted; a single request's ID is returned,
// so that its response can be dropped if it is cancelled.
func (c *cancelledSet) peekPOST(r *http.Request, session string) (jsonrpc.ID, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxLineLength))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) == 0 || body[0] != '{' {
		return jsonrpc.ID{}, false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return jsonrpc.ID{}, false
	}
	if req.Method == "notifications/cancelled" {
		c.note(session, req.Params)
	}
	return req.ID, req.ID.IsValid()
}

// cancelFilter is the response writer of a POST that carries request
// id: it drops the server-sent event that answers id once the client
// has cancelled it (the SDK writes each event with one Write).
type cancelFilter struct {
	http.ResponseWriter
	set     *cancelledSet
	session string
	id      jsonrpc.ID
}

func (f *cancelFilter) Write(p []byte) (int, error) {
	if f.answers(p) && f.set.take(f.session, f.id) {
		return len(p), nil
	}
	return f.ResponseWriter.Write(p)
}

// answers reports whether p is an event (or a JSON body) that answers
// f.id.
func (f *cancelFilter) answers(p []byte) bool {
	data := p
	if i := bytes.Index(p, []byte("data: ")); i >= 0 && bytes.HasPrefix(p, []byte("event: ")) {
		data = p[i+len("data: "):]
	}
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(data))
	if err != nil {
		return false
	}
	resp, ok := msg.(*jsonrpc.Response)
	return ok && resp.ID == f.id
}

// Unwrap lets http.ResponseController flush the stream.
func (f *cancelFilter) Unwrap() http.ResponseWriter { return f.ResponseWriter }
