// Package llmfake runs fake model servers on 127.0.0.1 that speak the real
// wire formats (Anthropic Messages and OpenAI chat completions, streaming
// SSE included), for tests and benchmarks that drive the real provider
// code. Each server plays scripted Turns and records what it was sent.
package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
)

// ToolCall is one tool call a Turn makes.
type ToolCall struct {
	ID   string
	Name string
	// Args is the raw argument text. It may be invalid JSON on purpose.
	Args string
}

// Turn is one scripted model response, or an injected failure.
type Turn struct {
	Thinking          string
	ThinkingSignature string
	Text              string
	ToolCalls         []ToolCall
	Usage             llm.Usage
	// StopReason overrides the wire stop reason ("" picks the natural one).
	StopReason string
	// Model is the model name reported back ("" echoes the request's).
	Model string

	// Status, when non-zero, answers with this HTTP error status instead.
	Status int
	// RetryAfter is sent as the Retry-After header with Status.
	RetryAfter string
	// CutAfter, when > 0, closes the connection after this many SSE events.
	CutAfter int
	// Malformed sends a data line that is not valid JSON mid-stream.
	Malformed bool
	// Delay waits before the response starts (aborted if the client leaves).
	Delay time.Duration
	// ChunkDelay waits between SSE events.
	ChunkDelay time.Duration
	// Hang sends the first events then blocks until the client disconnects.
	Hang bool
	// Drop closes the connection without answering (no status line): the
	// client sees EOF, as when a provider's load balancer drops it.
	Drop bool
	// ArgChunks splits each tool call's Args into this many deltas (default 1).
	ArgChunks int

	// Searches are server-side web searches the provider ran in this
	// turn before its text (Anthropic: server_tool_use and
	// web_search_tool_result blocks, counted in
	// usage.server_tool_use.web_search_requests).
	Searches []Search
	// Citations are the text block's citations (Anthropic:
	// web_search_result_location, streamed as citations_delta; OpenAI's
	// Responses API: url_citation annotations; chat completions, when
	// the request carries OpenRouter's web plugin: url_citation
	// annotations on the delta).
	Citations []Cite
}

// Search is one search the provider ran on its side, and what it found.
type Search struct {
	Query   string
	Results []Cite
}

// Cite is a page a search found, or a citation of one (CitedText set).
type Cite struct {
	URL, Title, CitedText string
}

// Request is one request the server received.
type Request struct {
	Path   string
	Header http.Header
	// Body is the decoded JSON body.
	Body map[string]any
	Raw  []byte
}

// Server is a running fake. Stop it with Close (NewAnthropic and NewOpenAI
// register that with t.Cleanup).
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	turns    []Turn
	requests []Request
	// Respond, when set, picks the Turn for each request instead of the
	// queue; it must be safe for concurrent use.
	Respond func(Request) Turn

	// cache, when set, bills Anthropic requests as the prompt cache
	// would (SimulatePromptCache).
	cache *promptCache
	// limit, when set, refuses requests over a rate limit (SetRateLimit).
	limit *limiter
	// openAIWire is set on an OpenAI fake: its rate-limit headers are
	// OpenAI's.
	openAIWire bool

	// responseN numbers the Responses API requests (their item IDs).
	responseN atomic.Int64

	disconnects atomic.Int64
	discCh      chan struct{}
	hangCh      chan struct{}
}

func newServer(tb testing.TB, handler func(s *Server) http.Handler, turns []Turn) *Server {
	s := &Server{turns: turns, discCh: make(chan struct{}, 1024), hangCh: make(chan struct{}, 1024)}
	s.Server = httptest.NewServer(handler(s))
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// Push appends turns to the queue.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Disconnects counts responses the client abandoned before they ended.
func (s *Server) Disconnects() int64 { return s.disconnects.Load() }

// Disconnected receives a value each time a client abandons a response.
func (s *Server) Disconnected() <-chan struct{} { return s.discCh }

// next records req and returns the turn to play; ok is false when the
// queue is empty and there is no Respond function.
func (s *Server) next(req Request) (Turn, bool) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	respond := s.Respond
	if respond == nil {
		defer s.mu.Unlock()
		if len(s.turns) == 0 {
			return Turn{}, false
		}
		t := s.turns[0]
		s.turns = s.turns[1:]
		return t, true
	}
	s.mu.Unlock()
	return respond(req), true
}

// Hanging receives a value each time a Hang turn has sent what it sends
// (and flushed it) and starts waiting for the client to leave, so a test
// can act on a stream that is known to be open.
func (s *Server) Hanging() <-chan struct{} { return s.hangCh }

// waitForClient notes a Hang turn waiting, then blocks until the client
// leaves and records that.
func (s *Server) waitForClient(r *http.Request) {
	select {
	case s.hangCh <- struct{}{}:
	default:
	}
	<-r.Context().Done()
	s.noteDisconnect()
}

// noteDisconnect records that the client went away mid-response.
func (s *Server) noteDisconnect() {
	s.disconnects.Add(1)
	select {
	case s.discCh <- struct{}{}:
	default:
	}
}

// readRequest decodes the request body; a body that is not JSON is a test
// bug in the client and is answered with 400.
func readRequest(w http.ResponseWriter, r *http.Request) (Request, bool) {
	req := Request{Path: r.URL.Path, Header: r.Header.Clone()}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"body is not JSON"}}`, http.StatusBadRequest)
		return req, false
	}
	req.Raw = raw
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"body is not a JSON object"}}`, http.StatusBadRequest)
		return req, false
	}
	return req, true
}

// sleep waits d unless the client leaves first; it reports whether the
// client is still there.
func (s *Server) sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		s.noteDisconnect()
		return false
	case <-t.C:
		return true
	}
}

// begin reads a request and picks its turn, then plays the parts every
// wire shares: the empty queue, the delay and a scripted error status
// (answered with writeErr, the wire's own error shape). ok is false when
// the response is already written or the client left.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, writeErr func(http.ResponseWriter, int, string)) (Request, Turn, bool) {
	req, ok := readRequest(w, r)
	if !ok {
		return req, Turn{}, false
	}
	if !s.admit(w, writeErr) {
		return req, Turn{}, false
	}
	turn, ok := s.next(req)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "llmfake: no scripted turn left")
		return req, turn, false
	}
	if turn.Model == "" {
		turn.Model, _ = req.Body["model"].(string) // echoed (see Turn.Model)
	}
	if !s.sleep(r, turn.Delay) {
		return req, turn, false
	}
	if turn.Drop {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler) // HTTP/2: aborting resets the stream
		}
		_ = conn.Close()
		return req, turn, false
	}
	if turn.Status != 0 {
		if turn.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.RetryAfter)
		}
		writeErr(w, turn.Status, fmt.Sprintf("llmfake: scripted error %d %s", turn.Status, http.StatusText(turn.Status)))
		return req, turn, false
	}
	return req, turn, true
}
