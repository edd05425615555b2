package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineLength bounds one JSON-RPC message over stdio; a longer line is
// answered with an invalid-request error and skipped.
const MaxLineLength = mcp.DefaultMaxLineLength

// lineTransport is newline-delimited JSON-RPC over a reader and a
// writer (`ava mcp`). It wraps what the SDK's IOTransport does so that
// bad input does not end the session — the SDK's transport closes the
// connection on the first line it cannot decode:
//
//   - a line that is not JSON is answered with -32700 (parse error);
//   - a JSON-RPC batch (an array; MCP 2025-06-18 removed batching), or a
//     JSON value that is not a JSON-RPC message, is answered with -32600
//     (invalid request);
//   - and the session goes on with the next line.
//
// It also keeps the MCP rule that a request the client cancelled
// (notifications/cancelled) gets no response: the SDK cancels the
// handler but still writes what it returns, and this transport drops it.
type lineTransport struct {
	r   io.ReadCloser
	w   io.WriteCloser
	log *slog.Logger
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{r: t.r, w: t.w, log: t.log, lines: make(chan line), closed: make(chan struct{}),
		cancelled: newCancelledSet()}
	go c.readLines()
	return c, nil
}

// line is one line read, or the error that ended the input.
type line struct {
	data    []byte
	tooLong bool
	err     error
}

// lineConn is lineTransport's connection.
type lineConn struct {
	r   io.ReadCloser
	w   io.WriteCloser
	log *slog.Logger

	lines     chan line
	closed    chan struct{}
	closeOnce sync.Once

	writeMu sync.Mutex

	cancelled *cancelledSet // requests the client cancelled, not yet answered
}

// readLines sends each line of the input to c.lines until the input
// ends or the connection closes.
func (c *lineConn) readLines() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		data, tooLong, err := readLine(br, MaxLineLength)
		if len(data) > 0 || tooLong {
			if !c.send(line{data: data, tooLong: tooLong}) {
				return
			}
		}
		if err != nil {
			c.send(line{err: err})
			return
		}
	}
}

func (c *lineConn) send(l line) bool {
	select {
	case c.lines <- l:
		return true
	case <-c.closed:
		return false
	}
}

// readLine reads one line of at most max bytes (a longer one is read to
// its end and reported tooLong), trimmed of white space.
func readLine(br *bufio.Reader, max int) (data []byte, tooLong bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(data)+len(frag) > max {
				tooLong, data = true, nil
			} else {
				data = append(data, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(data), tooLong, err
	}
}

// Read implements mcp.Connection: the next valid message; invalid input
// is answered and skipped.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l line
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
		}
		msg, rejected := c.decode(l)
		if rejected != nil {
			if err := c.writeRaw(ctx, rejected); err != nil {
				return nil, err
			}
			continue
		}
		return msg, nil
	}
}

// decode returns l's message, or the error response that rejects it.
func (c *lineConn) decode(l line) (jsonrpc.Message, []byte) {
	switch {
	case l.tooLong:
		return nil, errorResponse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes", MaxLineLength))
	case !json.Valid(l.data):
		return nil, errorResponse(nil, jsonrpc.CodeParseError, "parse error: a line is not valid JSON (send one JSON-RPC message per line)")
	case l.data[0] == '[':
		return nil, batchResponse(l.data)
	}
	msg, err := jsonrpc.DecodeMessage(l.data)
	if err != nil {
		return nil, errorResponse(rawID(l.data), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
		c.cancelled.note("", req.Params)
	}
	return msg, nil
}

// Write implements mcp.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && c.cancelled.take("", resp.ID) {
		c.log.Debug("a cancelled request's response is not sent", "id", resp.ID.Raw())
		return nil
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.writeRaw(ctx, data)
}

// writeRaw writes one message and its newline.
func (c *lineConn) writeRaw(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	return nil
}

// Close implements mcp.Connection.
func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		err = errors.Join(c.r.Close(), c.w.Close())
	})
	return err
}

// SessionID implements mcp.Connection: a stdio session has none.
func (c *lineConn) SessionID() string { return "" }

// wireError is a JSON-RPC error response.
type wireError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errorResponse is the error response to the request id (null when
// unknown).
func errorResponse(id json.RawMessage, code int64, message string) []byte {
	w := wireError{JSONRPC: "2.0", ID: id}
	if len(id) == 0 {
		w.ID = json.RawMessage("null")
	}
	w.Error.Code, w.Error.Message = code, message
	data, _ := json.Marshal(w) // cannot fail: plain fields and valid JSON
	return data
}

// rawID is the "id" of a JSON object that is not a valid message, when
// it is a valid request ID (a string or a number).
func rawID(data []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch m.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.ID
	}
	return nil
}

const batchMessage = "invalid request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send one message per line"

// batchResponse rejects a batch: one error per request in it that has an
// ID (an array of responses, as JSON-RPC answers a batch), or a single
// error with a null ID when none has one.
func batchResponse(data []byte) []byte {
	var items []json.RawMessage
	_ = json.Unmarshal(data, &items) // data is a valid JSON array
	var out []json.RawMessage
	for _, it := range items {
		if id := rawID(it); id != nil {
			out = append(out, errorResponse(id, jsonrpc.CodeInvalidRequest, batchMessage))
		}
	}
	if len(out) == 0 {
		return errorResponse(nil, jsonrpc.CodeInvalidRequest, batchMessage)
	}
	all, _ := json.Marshal(out) // cannot fail: each item is valid JSON
	return all
}
