package llmfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/llm"
)

// NewOpenAI starts a fake OpenAI chat completions server playing turns in
// order. It serves POST /v1/chat/completions and /chat/completions (and
// the Responses API, POST /v1/responses and /responses: see
// openai_responses.go), so a
// client's base URL may be s.URL+"/v1" (OpenAI style) or s.URL (Ollama
// style). A request with "stream": true gets SSE chunks in the real wire
// format ending with "data: [DONE]"; otherwise one chat.completion object.
//
// How Turn fields play here: Thinking is sent as "reasoning_content"
// deltas (DeepSeek and vLLM style); Text and Thinking are streamed a word
// per chunk; each tool call streams its id, type and name in its first
// chunk and its Args split into ArgChunks further chunks, calls one after
// another as OpenAI sends parallel calls; with
// stream_options.include_usage, a last chunk has empty choices and the
// usage (prompt_tokens includes cached reads and writes). Hang sends every
// chunk up to, not including, the one with finish_reason and then waits
// for the client to leave. CutAfter counts SSE events, "data: [DONE]"
// included. Malformed sends a non-JSON data line after the first chunk.
// ThinkingSignature is not sent: this wire has no signatures. A request
// carrying OpenRouter's web plugin ("plugins") gets the Citations as a
// delta's url_citation annotations, after the text, as OpenRouter sends
// them.
func NewOpenAI(tb testing.TB, turns ...Turn) *Server {
	return newServer(tb, func(s *Server) http.Handler {
		s.openAIWire = true
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/chat/completions", s.serveOpenAI)
		mux.HandleFunc("POST /chat/completions", s.serveOpenAI)
		mux.HandleFunc("POST /v1/responses", s.serveResponses)
		mux.HandleFunc("POST /responses", s.serveResponses)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeOpenAIError(w, http.StatusNotFound, "llmfake: no route for "+r.Method+" "+r.URL.Path)
		})
		return mux
	}, turns)
}

// openAIPlay is one turn being played, with what the request asked.
type openAIPlay struct {
	Turn
	id           string
	model        string
	created      int64
	includeUsage bool
	// plugin is set when the request carries OpenRouter's web plugin:
	// the Citations come as annotations.
	plugin bool
}

func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	req, turn, ok := s.begin(w, r, writeOpenAIError)
	if !ok {
		return
	}
	play := openAIPlay{Turn: turn, id: "chatcmpl-" + randomHex(12), model: turn.Model, created: time.Now().Unix()}
	if opts, ok := req.Body["stream_options"].(map[string]any); ok {
		play.includeUsage, _ = opts["include_usage"].(bool)
	}
	if plugins, ok := req.Body["plugins"].([]any); ok && len(plugins) > 0 {
		play.plugin = true
	}
	for i := range play.ToolCalls {
		if play.ToolCalls[i].ID == "" {
			play.ToolCalls[i].ID = "call_" + randomHex(12)
		}
	}
	if stream, _ := req.Body["stream"].(bool); stream {
		s.streamOpenAI(w, r, play)
		return
	}
	s.completeOpenAI(w, r, play)
}

// streamOpenAI plays a turn as SSE chunks.
func (s *Server) streamOpenAI(w http.ResponseWriter, r *http.Request, p openAIPlay) {
	events, finishAt := openAIEvents(p)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	for i, ev := range events {
		if p.Hang && i == finishAt {
			s.waitForClient(r)
			return
		}
		if p.CutAfter > 0 && i == p.CutAfter {
			cutConnection(rc)
			return
		}
		if i > 0 && !s.sleep(r, p.ChunkDelay) {
			return
		}
		malformed := p.Malformed && i == 1
		if malformed {
			ev = []byte(`{"id":"` + p.id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tru`)
		}
		if !s.writeEvent(w, r, rc, ev) || malformed {
			return
		}
	}
}

// writeEvent sends one SSE data event and flushes it; it reports whether
// the client is still there.
func (s *Server) writeEvent(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, data []byte) bool {
	if r.Context().Err() != nil {
		s.noteDisconnect()
		return false
	}
	if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
		s.noteDisconnect()
		return false
	}
	if err := rc.Flush(); err != nil {
		s.noteDisconnect()
		return false
	}
	return true
}

// cutConnection drops the connection mid-response, leaving the chunked
// body unterminated as a failing network would.
func cutConnection(rc *http.ResponseController) {
	_ = rc.Flush()
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(fmt.Sprintf("llmfake: cannot cut the connection: %v", err))
	}
	_ = conn.Close()
}

// openAIEvents returns the SSE data payloads of a turn and the position of
// the chunk carrying finish_reason.
func openAIEvents(p openAIPlay) ([][]byte, int) {
	var events [][]byte
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("llmfake: marshal chunk: %v", err))
		}
		events = append(events, b)
	}
	add(p.chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	for _, piece := range words(p.Thinking) {
		add(p.chunk(map[string]any{"content": nil, "reasoning_content": piece}, nil))
	}
	for _, piece := range words(p.Text) {
		add(p.chunk(map[string]any{"content": piece}, nil))
	}
	if p.plugin && len(p.Citations) > 0 {
		add(p.chunk(map[string]any{"annotations": p.pluginAnnotations()}, nil))
	}
	for i, tc := range p.ToolCalls {
		add(p.chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, piece := range splitN(tc.Args, p.ArgChunks) {
			add(p.chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": piece},
			}}}, nil))
		}
	}
	finishAt := len(events)
	add(p.chunk(map[string]any{}, p.finishReason()))
	if p.includeUsage {
		add(map[string]any{
			"id": p.id, "object": "chat.completion.chunk", "created": p.created, "model": p.model,
			"system_fingerprint": "fp_llmfake", "choices": []any{}, "usage": openAIUsage(p.Usage),
		})
	}
	events = append(events, []byte("[DONE]"))
	return events, finishAt
}

// chunk returns a chat.completion.chunk with one choice.
func (p openAIPlay) chunk(delta map[string]any, finish any) map[string]any {
	c := map[string]any{
		"id": p.id, "object": "chat.completion.chunk", "created": p.created, "model": p.model,
		"system_fingerprint": "fp_llmfake",
		"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
	if p.includeUsage {
		c["usage"] = nil
	}
	return c
}

func (p openAIPlay) finishReason() string {
	switch {
	case p.StopReason != "":
		return p.StopReason
	case len(p.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// completeOpenAI plays a turn as one chat.completion object.
func (s *Server) completeOpenAI(w http.ResponseWriter, r *http.Request, p openAIPlay) {
	if p.Hang {
		s.waitForClient(r)
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if p.Text != "" {
		msg["content"] = p.Text
	}
	if p.Thinking != "" {
		msg["reasoning_content"] = p.Thinking
	}
	if len(p.ToolCalls) > 0 {
		calls := make([]any, len(p.ToolCalls))
		for i, tc := range p.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Args}}
		}
		msg["tool_calls"] = calls
	}
	body, err := json.Marshal(map[string]any{
		"id": p.id, "object": "chat.completion", "created": p.created, "model": p.model,
		"system_fingerprint": "fp_llmfake",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": p.finishReason()}},
		"usage":              openAIUsage(p.Usage),
	})
	if err != nil {
		panic(fmt.Sprintf("llmfake: marshal completion: %v", err))
	}
	if p.Malformed {
		body = body[:len(body)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if p.CutAfter > 0 {
		_, _ = w.Write(body[:len(body)/2])
		cutConnection(http.NewResponseController(w))
		return
	}
	if _, err := w.Write(body); err != nil {
		s.noteDisconnect()
	}
}

// openAIUsage renders usage as OpenAI does: prompt_tokens counts every
// prompt token, cached ones included.
func openAIUsage(u llm.Usage) map[string]any {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	details := map[string]any{"cached_tokens": u.CacheReadTokens, "audio_tokens": 0}
	if u.CacheWriteTokens > 0 {
		details["cache_write_tokens"] = u.CacheWriteTokens
	}
	return map[string]any{
		"prompt_tokens": prompt, "completion_tokens": u.OutputTokens, "total_tokens": prompt + u.OutputTokens,
		"prompt_tokens_details":     details,
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0},
	}
}

// writeOpenAIError answers with OpenAI's error object.
func writeOpenAIError(w http.ResponseWriter, status int, msg string) {
	typ, code := "server_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
	case status == http.StatusNotFound:
		typ, code = "invalid_request_error", "not_found"
	case status < 500:
		typ = "invalid_request_error"
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// words splits s after each space, the way a model streams tokens.
func words(s string) []string {
	var out []string
	for _, w := range strings.SplitAfter(s, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// splitN splits s into n pieces of nearly equal rune counts (at least one
// piece, and no more pieces than runes).
func splitN(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	n = min(max(n, 1), max(runes, 1))
	out := make([]string, 0, n)
	for i := range n {
		size := runes / n
		if i < runes%n {
			size++
		}
		end := 0
		for range size {
			_, w := utf8.DecodeRuneInString(s[end:])
			end += w
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// pluginAnnotations are the Citations as OpenRouter's web plugin
// annotates a message: url_citation with the page's text as content.
func (p openAIPlay) pluginAnnotations() []any {
	var out []any
	for _, c := range p.Citations {
		start, end := citeSpan(p.Text, c.CitedText)
		out = append(out, map[string]any{"type": "url_citation", "url_citation": map[string]any{
			"url": c.URL, "title": c.Title, "content": c.CitedText, "start_index": start, "end_index": end}})
	}
	return out
}
