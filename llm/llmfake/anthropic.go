package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

// anthropicChunk is the largest text or thinking delta the Anthropic fake
// sends; longer text is split into several deltas, as the real API does.
const anthropicChunk = 24

// NewAnthropic starts a fake Anthropic Messages API on 127.0.0.1 that
// plays turns in order. It serves POST /v1/messages: a JSON message when the
// request's "stream" is false or absent, and the real SSE event sequence
// (message_start, ping, content_block_start/delta/stop, message_delta,
// message_stop) when it is true. With no turn left it answers 500 with
// "llmfake: no scripted turn left". The server is closed when tb's test ends.
func NewAnthropic(tb testing.TB, turns ...Turn) *Server {
	var msgID atomic.Int64
	s := newServer(tb, func(s *Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serveAnthropic(w, r, msgID.Add(1))
		})
	}, turns)
	if tb != nil {
		// Cleanups run last-registered first: dropping client connections
		// before Close releases handlers blocked in a Hang turn.
		tb.Cleanup(s.CloseClientConnections)
	}
	return s
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request, id int64) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		writeAnthropicError(w, http.StatusNotFound, fmt.Sprintf("llmfake: no route for %s %s", r.Method, r.URL.Path))
		return
	}
	req, turn, ok := s.begin(w, r, writeAnthropicError)
	if !ok {
		return
	}
	model := turn.Model
	s.mu.Lock()
	cache := s.cache
	s.mu.Unlock()
	if cache != nil {
		turn.Usage = cache.usage(req, turn.Usage)
	}
	w.Header().Set("Request-Id", fmt.Sprintf("req_fake_%d", id))
	msg := anthropicMessage{ID: fmt.Sprintf("msg_fake_%d", id), Model: model, Turn: turn}
	if stream, _ := req.Body["stream"].(bool); stream {
		s.streamAnthropic(w, r, msg)
		return
	}
	s.answerAnthropic(w, r, msg)
}

// anthropicErrorType is the error type the real API reports for status.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// writeAnthropicError answers with the real API's error envelope.
func writeAnthropicError(w http.ResponseWriter, status int, message string) {
	body, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": anthropicErrorType(status), "message": message},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// anthropicMessage is a turn about to be played, with the identity the
// server gave it.
type anthropicMessage struct {
	ID    string
	Model string
	Turn
}

func (m anthropicMessage) stopReason() string {
	switch {
	case m.StopReason != "":
		return m.StopReason
	case len(m.ToolCalls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

func (m anthropicMessage) usage(outputTokens, searches int) map[string]any {
	return map[string]any{
		"input_tokens":                m.Usage.InputTokens,
		"output_tokens":               outputTokens,
		"cache_read_input_tokens":     m.Usage.CacheReadTokens,
		"cache_creation_input_tokens": m.Usage.CacheWriteTokens,
		"server_tool_use":             m.serverUsage(searches),
	}
}

// toolID is the ID of the turn's i-th tool call.
func (m anthropicMessage) toolID(i int) string {
	if id := m.ToolCalls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("toolu_fake_%s_%d", strings.TrimPrefix(m.ID, "msg_fake_"), i)
}

// content is the complete content array, as the non-streaming API returns
// it. Tool arguments that are not valid JSON travel as a JSON string, the
// only way a JSON body can carry them.
func (m anthropicMessage) content() []map[string]any {
	var out []map[string]any
	if m.Thinking != "" {
		out = append(out, map[string]any{"type": "thinking", "thinking": m.Thinking, "signature": m.ThinkingSignature})
	}
	out = append(out, m.searchContent()...)
	if m.Text != "" {
		text := map[string]any{"type": "text", "text": m.Text}
		if len(m.Citations) > 0 {
			text["citations"] = m.citations()
		}
		out = append(out, text)
	}
	for i, tc := range m.ToolCalls {
		var input any = json.RawMessage(tc.Args)
		if strings.TrimSpace(tc.Args) == "" {
			input = map[string]any{}
		} else if !json.Valid([]byte(tc.Args)) {
			input = tc.Args
		}
		out = append(out, map[string]any{"type": "tool_use", "id": m.toolID(i), "name": tc.Name, "input": input})
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

// answerAnthropic writes the non-streaming JSON answer. Malformed sends a
// body that is not JSON, CutAfter > 0 drops the connection halfway through
// the body, Hang sends the headers and waits for the client to leave.
func (s *Server) answerAnthropic(w http.ResponseWriter, r *http.Request, m anthropicMessage) {
	body, err := json.Marshal(map[string]any{
		"id": m.ID, "type": "message", "role": "assistant", "model": m.Model,
		"content": m.content(), "stop_reason": m.stopReason(), "stop_sequence": nil,
		"usage": m.usage(m.Usage.OutputTokens, len(m.Searches)),
	})
	if err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, fmt.Sprintf("llmfake: encode message: %v", err))
		return
	}
	if m.Malformed {
		body = []byte(`{"id": "` + m.ID + `", "content": [ this is not json`)
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case m.Hang:
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		s.anthropicHang(r)
	case m.CutAfter > 0:
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		s.anthropicCut(w)
	default:
		_, _ = w.Write(body)
	}
}

// anthropicHang blocks until the client goes away.
func (s *Server) anthropicHang(r *http.Request) { s.waitForClient(r) }

// anthropicCut flushes what was written and closes the connection without
// ending the response, so the client sees a truncated body.
func (s *Server) anthropicCut(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	conn, _, err := rc.Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): aborting the handler resets the stream.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// anthropicEvent is one server-sent event.
type anthropicEvent struct {
	name string
	data string
}

// anthropicSSE encodes data, with its "type" set to name, as an event.
func anthropicSSE(name string, data map[string]any) anthropicEvent {
	data["type"] = name
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("llmfake: encode %s event: %v", name, err))
	}
	return anthropicEvent{name: name, data: string(b)}
}

// anthropicEvents is the turn as the real API streams it. first is the
// index of the first event after the first content delta: a Hang turn
// sends the events before it and then waits.
func anthropicEvents(m anthropicMessage) (events []anthropicEvent, first int) {
	events = append(events,
		anthropicSSE("message_start", map[string]any{"message": map[string]any{
			"id": m.ID, "type": "message", "role": "assistant", "model": m.Model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": m.usage(1, 0),
		}}),
		anthropicEvent{name: "ping", data: `{"type": "ping"}`},
	)
	if m.Malformed {
		events = append(events, anthropicEvent{name: "content_block_delta", data: `{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "oops`})
	}
	index := 0
	block := func(start map[string]any, deltas []map[string]any) {
		events = append(events, anthropicSSE("content_block_start", map[string]any{"index": index, "content_block": start}))
		for _, d := range deltas {
			events = append(events, anthropicSSE("content_block_delta", map[string]any{"index": index, "delta": d}))
			if first == 0 {
				first = len(events)
			}
		}
		events = append(events, anthropicSSE("content_block_stop", map[string]any{"index": index}))
		index++
	}
	if m.Thinking != "" || m.ThinkingSignature != "" {
		var deltas []map[string]any
		for _, piece := range anthropicSplit(m.Thinking, anthropicChunk) {
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": piece})
		}
		deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": m.ThinkingSignature})
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, deltas)
	}
	for i := range m.Searches {
		block(map[string]any{"type": "server_tool_use", "id": m.searchID(i), "name": "web_search", "input": map[string]any{}},
			[]map[string]any{{"type": "input_json_delta", "partial_json": m.searchQuery(i)}})
		block(m.searchResult(i), nil)
	}
	if m.Text != "" {
		var deltas []map[string]any
		for _, c := range m.citations() {
			deltas = append(deltas, map[string]any{"type": "citations_delta", "citation": c})
		}
		for _, piece := range anthropicSplit(m.Text, anthropicChunk) {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": piece})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas)
	}
	for i, tc := range m.ToolCalls {
		var deltas []map[string]any
		for _, piece := range anthropicSplitN(tc.Args, max(m.ArgChunks, 1)) {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": piece})
		}
		block(map[string]any{"type": "tool_use", "id": m.toolID(i), "name": tc.Name, "input": map[string]any{}}, deltas)
	}
	events = append(events,
		anthropicSSE("message_delta", map[string]any{
			"delta": map[string]any{"stop_reason": m.stopReason(), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": m.Usage.OutputTokens, "server_tool_use": m.serverUsage(len(m.Searches))},
		}),
		anthropicSSE("message_stop", map[string]any{}),
	)
	if first == 0 {
		first = 2
	}
	return events, first
}

// streamAnthropic plays the turn as SSE, flushing after each event.
func (s *Server) streamAnthropic(w http.ResponseWriter, r *http.Request, m anthropicMessage) {
	events, first := anthropicEvents(m)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for i, ev := range events {
		switch {
		case m.CutAfter > 0 && i == m.CutAfter:
			s.anthropicCut(w)
			return
		case m.Hang && i == first:
			s.anthropicHang(r)
			return
		}
		if i > 0 && !s.sleep(r, m.ChunkDelay) {
			return
		}
		if r.Context().Err() != nil {
			s.noteDisconnect()
			return
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data); err != nil {
			s.noteDisconnect()
			return
		}
		if err := rc.Flush(); err != nil {
			s.noteDisconnect()
			return
		}
	}
}

// anthropicSplit cuts s into pieces of at most size bytes, on rune boundaries.
func anthropicSplit(s string, size int) []string {
	var out []string
	for len(s) > size {
		cut := size
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			_, cut = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// anthropicSplitN cuts s into n pieces of near-equal length (fewer when s is
// shorter than n bytes), on rune boundaries.
func anthropicSplitN(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := (len(s) + n - 1) / n
	return anthropicSplit(s, max(size, 1))
}
