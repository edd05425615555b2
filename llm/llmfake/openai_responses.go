package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// This file plays a Turn on OpenAI's Responses API (POST /v1/responses),
// which NewOpenAI serves beside chat completions. Output items come in
// the order OpenAI sends them: a reasoning item (Thinking, as summary
// text), a web_search_call per Search (in_progress, searching, completed,
// then the item with its action: the query and, as the request's include
// asks, its sources), a message (Text as output_text deltas, each
// Citation a url_citation annotation over the first occurrence of its
// CitedText in Text), and a function_call per ToolCall (its arguments
// as deltas). response.completed carries the whole response and the
// usage (input_tokens counts cached ones). Item IDs are deterministic:
// the n-th request's i-th search is ws_fake_<n>_<i>. With a
// max_output_tokens StopReason the response ends response.incomplete.
// CutAfter counts events; Hang stops before the last event.

// responsesPlay is one turn being played on the Responses API.
type responsesPlay struct {
	Turn
	id    string
	n     int64
	model string
	seq   int
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	req, turn, ok := s.begin(w, r, writeOpenAIError)
	if !ok {
		return
	}
	n := s.responseN.Add(1)
	p := &responsesPlay{Turn: turn, n: n, id: fmt.Sprintf("resp_fake_%d", n), model: turn.Model}
	for i := range p.ToolCalls {
		if p.ToolCalls[i].ID == "" {
			p.ToolCalls[i].ID = fmt.Sprintf("call_fake_%d_%d", n, i)
		}
	}
	if stream, _ := req.Body["stream"].(bool); !stream {
		body, err := json.Marshal(p.response(p.output(), p.status()))
		if err != nil {
			panic(fmt.Sprintf("llmfake: marshal response: %v", err))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
		return
	}
	events := p.events()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	for i, ev := range events {
		if p.Hang && i == len(events)-1 {
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
		if !s.writeNamedEvent(w, r, rc, ev) {
			return
		}
	}
}

// writeNamedEvent sends one SSE event with its event: line, as the
// Responses API does.
func (s *Server) writeNamedEvent(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, ev map[string]any) bool {
	data, err := json.Marshal(ev)
	if err != nil {
		panic(fmt.Sprintf("llmfake: marshal event: %v", err))
	}
	if r.Context().Err() != nil {
		s.noteDisconnect()
		return false
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data); err != nil {
		s.noteDisconnect()
		return false
	}
	if err := rc.Flush(); err != nil {
		s.noteDisconnect()
		return false
	}
	return true
}

// status is the response's final status.
func (p *responsesPlay) status() string {
	if p.StopReason == "max_output_tokens" || p.StopReason == "length" {
		return "incomplete"
	}
	return "completed"
}

// searchID is the i-th search call's ID.
func (p *responsesPlay) searchID(i int) string { return fmt.Sprintf("ws_fake_%d_%d", p.n, i) }

// output is the response's output items, whole.
func (p *responsesPlay) output() []map[string]any {
	var out []map[string]any
	if p.Thinking != "" {
		out = append(out, map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_fake_%d", p.n),
			"summary": []any{map[string]any{"type": "summary_text", "text": p.Thinking}}})
	}
	for i := range p.Searches {
		out = append(out, p.searchItem(i, "completed"))
	}
	if p.Text != "" {
		out = append(out, p.messageItem("completed", p.Text, p.annotations()))
	}
	for i, tc := range p.ToolCalls {
		out = append(out, p.callItem(i, tc, tc.Args, "completed"))
	}
	return out
}

func (p *responsesPlay) searchItem(i int, status string) map[string]any {
	item := map[string]any{"type": "web_search_call", "id": p.searchID(i), "status": status}
	if status == "completed" {
		var sources []any
		for _, r := range p.Searches[i].Results {
			sources = append(sources, map[string]any{"type": "url", "url": r.URL})
		}
		item["action"] = map[string]any{"type": "search", "query": p.Searches[i].Query, "sources": sources}
	}
	return item
}

func (p *responsesPlay) messageItem(status, text string, anns []any) map[string]any {
	item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_fake_%d", p.n), "status": status, "role": "assistant", "content": []any{}}
	if status == "completed" {
		item["content"] = []any{map[string]any{"type": "output_text", "text": text, "annotations": anns, "logprobs": []any{}}}
	}
	return item
}

func (p *responsesPlay) callItem(i int, tc ToolCall, args, status string) map[string]any {
	return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake_%d_%d", p.n, i), "call_id": tc.ID,
		"name": tc.Name, "arguments": args, "status": status}
}

// annotations are the message's url_citation annotations: each over the
// first occurrence of its cited text in Text (character offsets), else
// over the whole text.
func (p *responsesPlay) annotations() []any {
	out := []any{}
	for _, c := range p.Citations {
		start, end := citeSpan(p.Text, c.CitedText)
		out = append(out, map[string]any{"type": "url_citation", "url": c.URL, "title": c.Title, "start_index": start, "end_index": end})
	}
	return out
}

// response is the response object with these output items.
func (p *responsesPlay) response(output []map[string]any, status string) map[string]any {
	if output == nil {
		output = []map[string]any{}
	}
	resp := map[string]any{"id": p.id, "object": "response", "created_at": time.Now().Unix(), "status": status,
		"model": p.model, "output": output, "error": nil, "incomplete_details": nil, "parallel_tool_calls": true,
		"tools": []any{}, "tool_choice": "auto", "temperature": 1, "top_p": 1, "metadata": map[string]any{}, "instructions": nil}
	if status == "incomplete" {
		resp["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	if status != "in_progress" {
		u := p.Usage
		in := u.InputTokens + u.CacheReadTokens
		resp["usage"] = map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens},
			"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + u.OutputTokens}
	}
	return resp
}

// events are the turn's stream events, numbered.
func (p *responsesPlay) events() []map[string]any {
	var out []map[string]any
	add := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = p.seq
		p.seq++
		out = append(out, fields)
	}
	add("response.created", map[string]any{"response": p.response(nil, "in_progress")})
	idx := 0
	if p.Thinking != "" {
		item := p.output()[0]
		add("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"type": "reasoning", "id": item["id"], "summary": []any{}}})
		add("response.reasoning_summary_text.delta", map[string]any{"output_index": idx, "item_id": item["id"], "summary_index": 0, "delta": p.Thinking})
		add("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		idx++
	}
	for i := range p.Searches {
		id := p.searchID(i)
		add("response.output_item.added", map[string]any{"output_index": idx, "item": p.searchItem(i, "in_progress")})
		for _, step := range []string{"in_progress", "searching", "completed"} {
			add("response.web_search_call."+step, map[string]any{"output_index": idx, "item_id": id})
		}
		add("response.output_item.done", map[string]any{"output_index": idx, "item": p.searchItem(i, "completed")})
		idx++
	}
	if p.Text != "" {
		p.textEvents(idx, add)
		idx++
	}
	for i, tc := range p.ToolCalls {
		item := p.callItem(i, tc, "", "in_progress")
		add("response.output_item.added", map[string]any{"output_index": idx, "item": item})
		for _, piece := range splitN(tc.Args, p.ArgChunks) {
			add("response.function_call_arguments.delta", map[string]any{"output_index": idx, "item_id": item["id"], "delta": piece})
		}
		add("response.function_call_arguments.done", map[string]any{"output_index": idx, "item_id": item["id"], "arguments": tc.Args})
		add("response.output_item.done", map[string]any{"output_index": idx, "item": p.callItem(i, tc, tc.Args, "completed")})
		idx++
	}
	final := "response.completed"
	if p.status() == "incomplete" {
		final = "response.incomplete"
	}
	add(final, map[string]any{"response": p.response(p.output(), p.status())})
	return out
}

// textEvents adds the message item's events through add.
func (p *responsesPlay) textEvents(idx int, add func(string, map[string]any)) {
	id := fmt.Sprintf("msg_fake_%d", p.n)
	add("response.output_item.added", map[string]any{"output_index": idx, "item": p.messageItem("in_progress", "", nil)})
	add("response.content_part.added", map[string]any{"output_index": idx, "item_id": id, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, piece := range words(p.Text) {
		add("response.output_text.delta", map[string]any{"output_index": idx, "item_id": id, "content_index": 0, "delta": piece, "logprobs": []any{}})
	}
	anns := p.annotations()
	for i, a := range anns {
		add("response.output_text.annotation.added", map[string]any{"output_index": idx, "item_id": id, "content_index": 0,
			"annotation_index": i, "annotation": a})
	}
	add("response.output_text.done", map[string]any{"output_index": idx, "item_id": id, "content_index": 0, "text": p.Text, "logprobs": []any{}})
	add("response.content_part.done", map[string]any{"output_index": idx, "item_id": id, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": p.Text, "annotations": anns}})
	add("response.output_item.done", map[string]any{"output_index": idx, "item": p.messageItem("completed", p.Text, anns)})
}

// citeSpan is where cited is in text, in characters: its first
// occurrence, else the whole text.
func citeSpan(text, cited string) (start, end int) {
	if i := strings.Index(text, cited); cited != "" && i >= 0 {
		start = utf8.RuneCountInString(text[:i])
		return start, start + utf8.RuneCountInString(cited)
	}
	return 0, utf8.RuneCountInString(text)
}
