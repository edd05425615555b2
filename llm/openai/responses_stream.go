package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/avaagent/ava/llm"
)

// streamResponses sends req through the Responses API, streamed. Deltas
// come from the text, reasoning, function call and web search events;
// the turn itself is read from the response.completed (or
// response.incomplete) event's response, whose output items are whole.
func (p *Provider) streamResponses(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	params, err := p.responseParams(req)
	if err != nil {
		return nil, fmt.Errorf("%s: build request: %w", p.name, err)
	}
	start := time.Now()
	ex := &exchange{}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream := p.responses.NewStreaming(withExchange(sctx, ex), params)
	defer closeDraining(stream, cancel)
	rs := &responseStream{onDelta: onDelta, shown: map[string]bool{}}
	for rs.final == nil && stream.Next() {
		// The turn is whole at response.completed: a server that keeps
		// the stream open after it is not waited for.
		if err := rs.add(stream.Current()); err != nil {
			return nil, fmt.Errorf("%s: response %s: %w", p.name, req.Model, p.responseError(err))
		}
	}
	if err := stream.Err(); err != nil {
		return nil, fmt.Errorf("%s: response %s: %w", p.name, req.Model, p.streamError(ctx, ex, err))
	}
	if rs.final == nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: response %s: %w", p.name, req.Model, ctxError(ctx))
		}
		return nil, fmt.Errorf("%s: response %s ended without response.completed: %w", p.name, req.Model, llm.ErrStreamCut)
	}
	resp, err := turn(rs.final, req.Model)
	if err != nil {
		return nil, fmt.Errorf("%s: response %s: %w: %w", p.name, req.Model, llm.ErrMalformed, err)
	}
	p.log.DebugContext(ctx, "response streamed", "model", resp.Model, "stop", resp.StopReason,
		"input_tokens", resp.Usage.InputTokens, "output_tokens", resp.Usage.OutputTokens,
		"cache_read_tokens", resp.Usage.CacheReadTokens, "web_searches", resp.Usage.WebSearches, "elapsed", time.Since(start))
	return resp, nil
}

// responseStream follows a Responses API stream.
type responseStream struct {
	onDelta func(llm.Delta)
	// shown marks the search calls whose activity was reported: with
	// their query (true) or not yet (false).
	shown map[string]bool
	final *responses.Response
}

// failure is a response.failed or error event: the API's error code and
// message.
type failure struct{ code, message string }

func (f failure) Error() string { return f.message + " (" + f.code + ")" }

// add folds one event in.
func (rs *responseStream) add(ev responses.ResponseStreamEventUnion) error {
	switch ev.Type {
	case "response.output_text.delta", "response.refusal.delta":
		rs.onDelta(llm.Delta{Type: llm.DeltaText, Text: ev.Delta})
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		rs.onDelta(llm.Delta{Type: llm.DeltaThinking, Text: ev.Delta})
	case "response.output_item.added":
		if ev.Item.Type == "function_call" {
			rs.onDelta(llm.Delta{Type: llm.DeltaToolCall, ToolName: ev.Item.Name})
		}
		rs.search(ev.Item.ID, json.RawMessage(ev.Item.RawJSON()))
	case "response.web_search_call.in_progress", "response.web_search_call.searching":
		rs.search(ev.ItemID, nil)
	case "response.output_item.done":
		rs.search(ev.Item.ID, json.RawMessage(ev.Item.RawJSON()))
	case "response.completed", "response.incomplete":
		r := ev.Response
		rs.final = &r
	case "response.failed":
		return failure{code: string(ev.Response.Error.Code), message: ev.Response.Error.Message}
	case "error":
		return failure{code: ev.Code, message: ev.Message}
	}
	return nil
}

// search reports the activity of a web search call: once when it starts
// (its query may not be known yet) and once more when its query is.
func (rs *responseStream) search(id string, raw json.RawMessage) {
	var it responseItem
	if raw != nil {
		if json.Unmarshal(raw, &it) != nil || it.Type != "web_search_call" {
			return
		}
	}
	in, withQuery := actionInput(it.Action)
	if shown, seen := rs.shown[id]; seen && (shown || !withQuery) {
		return
	}
	rs.shown[id] = withQuery
	rs.onDelta(llm.Delta{Type: llm.DeltaServerTool, ToolName: "web_search", Input: in})
}

// actionInput is a search call's action as the tool call's arguments
// (for the activity line and the audit log): its query (the first of its
// queries when it has several, all of them kept), or the page it opened
// and the pattern it looked for; the sources are left out. known is
// false while the action says none of these yet.
func actionInput(a *searchAction) (in json.RawMessage, known bool) {
	if a == nil {
		return json.RawMessage("{}"), false
	}
	act := *a
	act.Sources = nil
	if act.Query == "" && len(act.Queries) > 0 {
		act.Query = act.Queries[0]
	}
	raw, err := json.Marshal(act)
	if err != nil {
		return json.RawMessage("{}"), false
	}
	return raw, act.Query != "" || act.URL != ""
}

// responseError maps a failure the stream reported to an *llm.APIError
// (its status inferred from the code, as for chat completions).
func (p *Provider) responseError(err error) error {
	f, ok := err.(failure)
	if !ok {
		return err
	}
	code, _ := json.Marshal(f.code)
	msg := llm.ErrorText(f.message, llm.MaxErrorText, p.key)
	if msg == "" {
		msg = http.StatusText(http.StatusInternalServerError)
	}
	return fmt.Errorf("error sent inside the stream: %w",
		&llm.APIError{Provider: p.name, StatusCode: inferStatus(f.code, code), Message: msg})
}

// turn maps a finished response to Ava's turn: each output item to its
// blocks, the usage, the stop reason.
func turn(r *responses.Response, model string) (*llm.Response, error) {
	var (
		blocks   []llm.Block
		searches int
		hasCalls bool
	)
	for i, item := range r.Output {
		raw := json.RawMessage(item.RawJSON())
		var it responseItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("output item %d: %w", i, err)
		}
		bs, err := itemBlocks(it, raw)
		if err != nil {
			return nil, fmt.Errorf("output item %d (%s): %w", i, it.Type, err)
		}
		searches += boolInt(it.Type == "web_search_call")
		hasCalls = hasCalls || it.Type == "function_call"
		blocks = append(blocks, bs...)
	}
	if r.Model != "" {
		model = string(r.Model)
	}
	u := r.Usage
	read := int(u.InputTokensDetails.CachedTokens)
	return &llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: blocks},
		Usage: llm.Usage{InputTokens: max(int(u.InputTokens)-read, 0), OutputTokens: int(u.OutputTokens),
			CacheReadTokens: read, WebSearches: searches},
		StopReason:    responseStop(r, hasCalls),
		RawStopReason: rawResponseStop(r),
		ID:            r.ID,
		Model:         model,
	}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// responseStop maps the response's status.
func responseStop(r *responses.Response, hasCalls bool) llm.StopReason {
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails.Reason == "max_output_tokens":
		// Before a tool call: one cut short has arguments cut short.
		return llm.StopMaxTokens
	case hasCalls:
		return llm.StopToolUse
	case r.Status == "completed", r.Status == "":
		return llm.StopEndTurn
	}
	return llm.StopOther
}

// rawResponseStop is the response's own word for how it ended: its
// incomplete reason ("max_output_tokens", "content_filter") when it is
// incomplete, else its status ("completed").
func rawResponseStop(r *responses.Response) string {
	if r.Status == "incomplete" && r.IncompleteDetails.Reason != "" {
		return string(r.IncompleteDetails.Reason)
	}
	return string(r.Status)
}

// itemBlocks maps one output item, kept raw, to its blocks. An item of a
// kind Ava never asks for is an error: it could not be sent back.
func itemBlocks(it responseItem, raw json.RawMessage) ([]llm.Block, error) {
	own := func(b llm.Block) llm.Block {
		b.Raw, b.Provider = raw, responsesProvider
		return b
	}
	switch it.Type {
	case "message":
		return messageBlocks(it, raw)
	case "function_call":
		args := json.RawMessage(it.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if it.CallID == "" || it.Name == "" {
			// Its output could not name it: the item is malformed.
			return nil, fmt.Errorf("function_call item %q without a call_id or a name", it.ID)
		}
		return []llm.Block{own(llm.Block{Type: llm.BlockToolCall, ToolCallID: it.CallID, ToolName: it.Name, Input: args})}, nil
	case "web_search_call":
		if it.ID == "" {
			return nil, fmt.Errorf("web_search_call item without an id")
		}
		in, _ := actionInput(it.Action)
		use := own(llm.Block{Type: llm.BlockServerToolUse, ToolCallID: it.ID, ToolName: "web_search", Input: in})
		res := own(llm.Block{Type: llm.BlockServerToolResult, ToolCallID: it.ID, ToolName: "web_search", Citations: sources(it.Action)})
		return []llm.Block{use, res}, nil
	case "reasoning":
		var text []string
		for _, s := range it.Summary {
			text = append(text, s.Text)
		}
		return []llm.Block{own(llm.Block{Type: llm.BlockThinking, Text: strings.Join(text, "\n\n")})}, nil
	}
	return nil, fmt.Errorf("output item of unexpected type %q", it.Type)
}

// sources are the pages a search consulted.
func sources(a *searchAction) []llm.Citation {
	if a == nil {
		return nil
	}
	var out []llm.Citation
	for _, s := range a.Sources {
		if s.URL != "" {
			out = append(out, llm.Citation{URL: s.URL})
		}
	}
	if len(out) == 0 && a.URL != "" {
		out = append(out, llm.Citation{URL: a.URL})
	}
	return out
}

// messageBlocks maps a message item to a text block per content part,
// each holding the item with that part alone (so it can be sent back
// whole, messageItem), its url_citation annotations as citations.
func messageBlocks(it responseItem, raw json.RawMessage) ([]llm.Block, error) {
	var head map[string]json.RawMessage
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	var out []llm.Block
	for j, partRaw := range it.Content {
		var part outputPart
		if err := json.Unmarshal(partRaw, &part); err != nil {
			return nil, fmt.Errorf("part %d: %w", j, err)
		}
		head["content"] = json.RawMessage("[" + string(partRaw) + "]")
		one, err := json.Marshal(head)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", j, err)
		}
		text := part.Text
		if part.Type == "refusal" {
			text = part.Refusal
		}
		out = append(out, llm.Block{Type: llm.BlockText, Text: text, Raw: one, Provider: responsesProvider,
			Citations: urlCitations(text, part.Annotations)})
	}
	return out, nil
}

// urlCitation is a url_citation annotation: the page, where in the text
// it is cited (character offsets), and the cited text when the
// annotation carries it (OpenRouter's does).
type urlCitation struct {
	URL        string `json:"url"`
	Title      string `json:"title"`
	Content    string `json:"content"`
	StartIndex int    `json:"start_index"`
	EndIndex   int    `json:"end_index"`
}

// urlCitations reads the Responses API's url_citation annotations of
// text (the fields flat in the annotation). No Raw: the annotation goes
// back inside its message item (the text block's Raw).
func urlCitations(text string, anns []json.RawMessage) []llm.Citation {
	return citations(text, anns, func(raw json.RawMessage) (urlCitation, bool) {
		var a struct {
			Type string `json:"type"`
			urlCitation
		}
		ok := json.Unmarshal(raw, &a) == nil && a.Type == "url_citation"
		return a.urlCitation, ok
	})
}

// citations maps the annotations of text that decode reads as
// url_citations to citations, at most llm.MaxCitationsPerBlock: the cited
// text is the annotation's own when it has some, else the span of text
// it points at (text converted to characters once, when needed).
func citations(text string, anns []json.RawMessage, decode func(json.RawMessage) (urlCitation, bool)) []llm.Citation {
	var out []llm.Citation
	var runes []rune
	for _, raw := range anns {
		if len(out) == llm.MaxCitationsPerBlock {
			break
		}
		c, ok := decode(raw)
		if !ok || c.URL == "" {
			continue
		}
		cited := llm.CutCitedText(strings.TrimSpace(c.Content))
		if cited == "" {
			if runes == nil {
				runes = []rune(text)
			}
			cited = span(runes, c.StartIndex, c.EndIndex)
		}
		out = append(out, llm.Citation{URL: c.URL, Title: c.Title, CitedText: cited})
	}
	return out
}

// span is the characters [start, end) of text, at most
// llm.MaxCitedText of them, or "" when they are out of range.
func span(text []rune, start, end int) string {
	if start < 0 || end <= start || end > len(text) {
		return ""
	}
	return llm.CutCitedText(strings.TrimSpace(string(text[start:end])))
}
