// Package client is the typed client of Ava's daemon (ava serve): the
// command-line clients (ava ps, status, stop, send, a background spawn)
// and any Go program talk to the daemon through it. It holds the wire
// types of the HTTP API and depends on nothing else of Ava's.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultAddr is the daemon's default address (AVA_ADDR).
const DefaultAddr = "127.0.0.1:7777"

// ErrNoDaemon means nothing answers at the daemon's address.
var ErrNoDaemon = errors.New("no Ava daemon is running")

// APIError is an error response of the daemon.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the daemon's {"error": …}.
	Message string
	// RetryAfter is the answer's Retry-After (a 503's): when to try
	// again; zero without one.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.StatusCode)
}

// Client talks to one daemon. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// New returns a client of the daemon at addr ("host:port" or a URL; ""
// is DefaultAddr), sending token as a bearer token when it is set.
func New(addr, token string) *Client {
	if addr == "" {
		addr = DefaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return &Client{base: strings.TrimRight(addr, "/"), token: token, hc: &http.Client{}}
}

// Addr is the daemon's base URL.
func (c *Client) Addr() string { return c.base }

// Health asks GET /healthz.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	return h, c.do(ctx, http.MethodGet, "/healthz", nil, &h)
}

// SubagentFilter selects subagents; zero fields select all.
type SubagentFilter struct {
	Parent string
	// Status lists statuses; "active" stands for queued, pending and
	// running.
	Status []string
}

// Subagents lists subagents, newest first.
func (c *Client) Subagents(ctx context.Context, f SubagentFilter) ([]Subagent, error) {
	q := url.Values{}
	if f.Parent != "" {
		q.Set("parent", f.Parent)
	}
	if len(f.Status) > 0 {
		q.Set("status", strings.Join(f.Status, ","))
	}
	var l SubagentList
	err := c.do(ctx, http.MethodGet, "/api/subagents?"+q.Encode(), nil, &l)
	return l.Subagents, err
}

// Findings returns the board of a group (a Subagent's GroupID), oldest
// first.
func (c *Client) Findings(ctx context.Context, group string) ([]Finding, error) {
	var l FindingList
	err := c.do(ctx, http.MethodGet, "/api/groups/"+url.PathEscape(group)+"/findings", nil, &l)
	return l.Findings, err
}

// Subagent returns one subagent by ID or unique prefix.
func (c *Client) Subagent(ctx context.Context, id string) (Subagent, error) {
	var s Subagent
	return s, c.do(ctx, http.MethodGet, "/api/subagents/"+url.PathEscape(id), nil, &s)
}

// Spawn starts a background subagent and returns it at once, or, when
// the daemon's confirmation policy asks for it, returns only the proposal
// awaiting the person (see Confirm).
//
// It sends an Idempotency-Key of its own, drawn once for the call, and
// tries again with the same key when the daemon answers 503 (after its
// Retry-After) or the connection fails after the request was sent: a
// retry whose first attempt was recorded gets that first subagent, so
// one call never spawns two.
func (c *Client) Spawn(ctx context.Context, r SpawnRequest) (Subagent, *Proposal, error) {
	key, err := NewIdempotencyKey()
	if err != nil {
		return Subagent{}, nil, err
	}
	return c.SpawnWithKey(ctx, r, key)
}

// SpawnWithKey is Spawn under a key the caller chose (to retry across
// processes, say): the same key and request give the same subagent.
func (c *Client) SpawnWithKey(ctx context.Context, r SpawnRequest, key string) (Subagent, *Proposal, error) {
	var a SpawnAnswer
	err := c.retry(ctx, func() error {
		return c.doWith(ctx, http.MethodPost, "/api/subagents", http.Header{IdempotencyKeyHeader: {key}}, r, &a)
	})
	if err != nil {
		return Subagent{}, nil, err
	}
	return a.Subagent, a.Pending, nil
}

// Sessions lists the main sessions with their state.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var l SessionList
	err := c.do(ctx, http.MethodGet, "/api/sessions", nil, &l)
	return l.Sessions, err
}

// Session returns one main session with its state and spend.
func (c *Client) Session(ctx context.Context, key string) (Session, error) {
	var s Session
	err := c.do(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(key), nil, &s)
	return s, err
}

// Stop stops a session's run (a subagent's: its key
// ava:subagent:S-xxxxxx).
func (c *Client) Stop(ctx context.Context, sessionKey string) (StopResponse, error) {
	var r StopResponse
	return r, c.do(ctx, http.MethodPost, "/api/chat/stop", StopRequest{SessionKey: sessionKey}, &r)
}

// Logs queries the audit log; q holds the GET /api/logs parameters
// (agent, last, type, since, until, search, session).
func (c *Client) Logs(ctx context.Context, q url.Values) (LogList, error) {
	var l LogList
	return l, c.do(ctx, http.MethodGet, "/api/logs?"+q.Encode(), nil, &l)
}

// MCPServers lists the MCP servers roles use and their state in the
// daemon (GET /api/mcp/servers).
func (c *Client) MCPServers(ctx context.Context) ([]MCPServer, error) {
	var out MCPServerList
	if err := c.do(ctx, http.MethodGet, "/api/mcp/servers", nil, &out); err != nil {
		return nil, err
	}
	return out.Servers, nil
}

// LoginLink asks the daemon for a new one-time link that logs a browser
// in to its web panel (POST /api/login/link).
func (c *Client) LoginLink(ctx context.Context) (string, error) {
	var out struct {
		Link string `json:"link"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/login/link", struct{}{}, &out); err != nil {
		return "", err
	}
	return out.Link, nil
}

// PanelLogins lists the browsers logged in to the web panel (GET
// /api/logins).
func (c *Client) PanelLogins(ctx context.Context) ([]PanelLogin, error) {
	var out PanelLoginList
	if err := c.do(ctx, http.MethodGet, "/api/logins", nil, &out); err != nil {
		return nil, err
	}
	return out.Logins, nil
}

// RevokePanelLogin ends one web panel login by its ID (DELETE
// /api/logins/{id}); an unknown ID is a 404.
func (c *Client) RevokePanelLogin(ctx context.Context, id string) error {
	var out Revoked
	return c.do(ctx, http.MethodDelete, "/api/logins/"+url.PathEscape(id), nil, &out)
}

// RevokePanelLogins ends every web panel login (DELETE /api/logins) and
// reports how many there were.
func (c *Client) RevokePanelLogins(ctx context.Context) (int, error) {
	var out Revoked
	if err := c.do(ctx, http.MethodDelete, "/api/logins", nil, &out); err != nil {
		return 0, err
	}
	return out.Revoked, nil
}

// Chat sends a message and returns the stream of its turn, which ends
// with an EventDone event. Close the stream when done with it; closing
// it early does not stop the turn.
func (c *Client) Chat(ctx context.Context, r ChatRequest) (*Stream, error) {
	if subagentSession(r.SessionKey) {
		// A subagent's follow-up takes no key (the daemon refuses one):
		// it is sent once, without the retries a key makes safe.
		return c.ChatWithKey(ctx, r, "")
	}
	key, err := NewIdempotencyKey()
	if err != nil {
		return nil, err
	}
	return c.ChatWithKey(ctx, r, key)
}

// subagentSession reports whether key names a subagent's session (its
// own key, or its short ID), where a message is a follow-up.
func subagentSession(key string) bool {
	return strings.HasPrefix(key, "ava:subagent:") || strings.HasPrefix(key, "S-")
}

// ChatWithKey is Chat under an idempotency key the caller chose: the
// message is sent once however often the call is made with that key.
// Chat draws one per call. The request is sent again with the key after
// a 503 (waiting its Retry-After) or a connection that failed; a stream
// that breaks before its done event is opened again the same way, and
// the repeat (the daemon attaches it to the same turn, from where it
// began) is read on after the last event already returned.
func (c *Client) ChatWithKey(ctx context.Context, r ChatRequest, key string) (*Stream, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode chat request: %w", err)
	}
	open := func() (*Stream, error) {
		var st *Stream
		once := func() error {
			req, err := c.newRequest(ctx, http.MethodPost, "/api/chat", bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set(IdempotencyKeyHeader, key)
			}
			st, err = c.openStream(req)
			return err
		}
		if key == "" { // without a key a retry could send it twice
			return st, once()
		}
		err := c.retry(ctx, once)
		return st, err
	}
	st, err := open()
	if err != nil {
		return nil, err
	}
	st.ctx = ctx
	if key != "" { // only a keyed message may be sent again
		st.reopen = open
	}
	return st, nil
}

// Stream follows a session's events after sequence number after (0:
// from the first), replayed then live, until ctx is done or Close.
func (c *Client) Stream(ctx context.Context, sessionKey string, after uint64) (*Stream, error) {
	q := url.Values{"sessionKey": {sessionKey}}
	req, err := c.newRequest(ctx, http.MethodGet, "/api/chat/stream?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	}
	return c.openStream(req)
}

// StreamFromNow follows a session's events from its current end: what
// happens from now on, live.
func (c *Client) StreamFromNow(ctx context.Context, sessionKey string) (*Stream, error) {
	q := url.Values{"sessionKey": {sessionKey}, "after": {"now"}}
	req, err := c.newRequest(ctx, http.MethodGet, "/api/chat/stream?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	return c.openStream(req)
}

func (c *Client) openStream(req *http.Request) (*Stream, error) {
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return newStream(resp), nil
}

func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// do sends in (JSON, when not nil) and decodes the answer into out.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.doWith(ctx, method, path, nil, in, out)
}

// doWith is do with extra request headers.
func (c *Client) doWith(ctx context.Context, method, path string, header http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return readAPIError(resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// transportError names a refused connection as ErrNoDaemon.
func (c *Client) transportError(err error) error {
	var op *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial") {
		return fmt.Errorf("%w at %s: %w", ErrNoDaemon, c.base, err)
	}
	return fmt.Errorf("daemon at %s: %w", c.base, err)
}

func readAPIError(resp *http.Response) error {
	var after time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		after = time.Duration(s) * time.Second
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb ErrorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
		eb.Error = strings.TrimSpace(string(b))
		if eb.Error == "" {
			eb.Error = http.StatusText(resp.StatusCode)
		}
	}
	return &APIError{StatusCode: resp.StatusCode, Message: eb.Error, RetryAfter: after}
}

// IsStatus reports whether err is an APIError with HTTP status code.
func IsStatus(err error, code int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == code
}

// Hooks lists the daemon's hooks and the deliveries of status (a
// comma-separated list or "all"; "" lists pending, failed and dead ones).
func (c *Client) Hooks(ctx context.Context, status string) (HookList, error) {
	var out HookList
	path := "/api/hooks"
	if status != "" {
		path += "?" + url.Values{"status": {status}}.Encode()
	}
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// RetryHooks sends failed and dead deliveries again (those of ids, each
// an ID or a unique prefix of one; else all) and returns them after one
// attempt each.
func (c *Client) RetryHooks(ctx context.Context, ids []string) ([]HookDelivery, error) {
	var out HookList
	if err := c.do(ctx, http.MethodPost, "/api/hooks/retry", HookRetryRequest{IDs: ids}, &out); err != nil {
		return nil, err
	}
	return out.Deliveries, nil
}
