package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
)

// searchTurn is a turn in which OpenAI searched and cited a page.
var searchTurn = llmfake.Turn{
	Thinking: "I should look this up.",
	Searches: []llmfake.Search{{Query: "podcast transcription pricing", Results: []llmfake.Cite{
		{URL: "https://example.com/pricing", Title: "Pricing"}, {URL: "https://example.org/other"}}}},
	Text:      "Transcription costs $0.006 per minute on most APIs.",
	Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Pricing", CitedText: "$0.006 per minute"}},
	Usage:     llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 40},
}

// onOpenAI is a provider configured as OpenAI's own endpoint.
func onOpenAI(c *openai.Config) { c.ServerSearch = openai.SearchResponses }

// searchRequest offers a function tool and the provider's search.
func searchRequest(text string) *llm.Request {
	return &llm.Request{Model: "gpt-5", System: "be brief", Messages: []llm.Message{llm.UserText(text)},
		Tools: []llm.ToolDef{{Name: "read_webpages", Description: "read pages",
			Schema: json.RawMessage(`{"type":"object","properties":{"urls":{"type":"array","items":{"type":"string"}}}}`)}},
		ServerTools: &llm.ServerTools{WebSearch: true, WebFetch: true, MaxUses: 5, AllowedDomains: []string{"example.com"}}}
}

// inputItems are the input items a Responses request sent.
func inputItems(t *testing.T, req llmfake.Request) []map[string]any {
	t.Helper()
	var body struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(req.Raw, &body); err != nil {
		t.Fatal(err)
	}
	return body.Input
}

// TestResponsesSearchStreamed: with the provider's search on OpenAI's
// endpoint the request goes to the Responses API with web_search (the
// allowed domains as its filter) beside the function tools; the
// search call shows as activity with its query, comes back as a server
// tool use and result, the answer's url_citation becomes a citation
// with the cited text, the search is counted; and the next turn sends
// the reasoning, the search call and the message back unchanged.
func TestResponsesSearchStreamed(t *testing.T) {
	srv := llmfake.NewOpenAI(t, searchTurn, llmfake.Turn{Text: "ok"})
	p := newProvider(t, srv, onOpenAI)
	req := searchRequest("research pricing")
	resp, rec := stream(t, p, req)

	first := srv.Requests()[0]
	if first.Path != "/v1/responses" || first.Body["stream"] != true || first.Body["instructions"] != "be brief" {
		t.Fatalf("request = %s %s", first.Path, first.Raw)
	}
	tools, _ := json.Marshal(first.Body["tools"])
	for _, want := range []string{`{"filters":{"allowed_domains":["example.com"]},"type":"web_search"}`, `"name":"read_webpages"`, `"strict":false`} {
		if !strings.Contains(string(tools), want) {
			t.Errorf("tools %s lack %s", tools, want)
		}
	}
	if first.Body["max_tool_calls"] != 5.0 {
		t.Errorf("max_tool_calls = %v, want the role's max_uses", first.Body["max_tool_calls"])
	}
	if inc, _ := json.Marshal(first.Body["include"]); string(inc) != `["web_search_call.action.sources","reasoning.encrypted_content"]` {
		t.Errorf("include = %s", inc)
	}
	if first.Body["store"] != false {
		t.Errorf("store = %v, want false: OpenAI keeps no copy", first.Body["store"])
	}

	var queries []string
	for _, d := range rec.deltas {
		if d.Type == llm.DeltaServerTool {
			queries = append(queries, string(d.Input))
		}
	}
	if len(queries) != 2 || queries[0] != "{}" || !strings.Contains(queries[1], `"query":"podcast transcription pricing"`) {
		t.Errorf("search activity = %q, want one at the start and one with the query", queries)
	}
	if text, _ := rec.joined(llm.DeltaText); text != searchTurn.Text {
		t.Errorf("text deltas = %q", text)
	}

	var types []string
	for _, b := range resp.Message.Content {
		types = append(types, string(b.Type))
	}
	if got := strings.Join(types, ","); got != "thinking,server_tool_use,server_tool_result,text" {
		t.Fatalf("blocks = %s", got)
	}
	use, res, text := resp.Message.Content[1], resp.Message.Content[2], resp.Message.Content[3]
	if use.ToolName != "web_search" || use.ToolCallID != "ws_fake_1_0" || !strings.Contains(string(use.Input), "podcast transcription pricing") {
		t.Errorf("search call = %+v", use)
	}
	if len(res.Citations) != 2 || res.Citations[0].URL != "https://example.com/pricing" {
		t.Errorf("search result pages = %+v", res.Citations)
	}
	if c := resp.Message.Citations(); len(c) != 1 || c[0].URL != "https://example.com/pricing" || c[0].Title != "Pricing" ||
		c[0].CitedText != "$0.006 per minute" {
		t.Errorf("citations = %+v", c)
	}
	if text.Text != searchTurn.Text {
		t.Errorf("text = %q", text.Text)
	}
	if want := (llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 40, WebSearches: 1}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.StopReason != llm.StopEndTurn || resp.RawStopReason != "completed" || resp.Model != "gpt-5" || !strings.HasPrefix(resp.ID, "resp_") {
		t.Errorf("stop %q (raw %q) model %q id %q", resp.StopReason, resp.RawStopReason, resp.Model, resp.ID)
	}

	// The next turn sends every output item back as the API sent it.
	req.Messages = append(req.Messages, resp.Message, llm.UserText("anything else?"))
	stream(t, p, req)
	sent := inputItems(t, srv.Requests()[1])
	if len(sent) != 5 {
		t.Fatalf("input items = %v", sent)
	}
	var firstOut struct {
		Output []json.RawMessage `json:"output"`
	}
	for _, b := range resp.Message.Content {
		if b.Type == llm.BlockServerToolUse {
			firstOut.Output = append(firstOut.Output, b.Raw)
		}
	}
	for i, want := range []string{"reasoning", "web_search_call", "message"} {
		if sent[i+1]["type"] != want {
			t.Errorf("item %d = %v, want %s", i+1, sent[i+1], want)
		}
	}
	if !sameJSON(t, sent[2], firstOut.Output[0]) {
		t.Errorf("search call sent back = %v, want %s", sent[2], firstOut.Output[0])
	}
	back, _ := json.Marshal(sent[3])
	for _, want := range []string{`"id":"msg_fake_1"`, `"type":"url_citation"`, `"start_index":20`} {
		if !strings.Contains(string(back), want) {
			t.Errorf("message sent back without %s: %s", want, back)
		}
	}
	if sent[4]["role"] != "user" || sent[4]["content"] != "anything else?" {
		t.Errorf("last item = %v", sent[4])
	}
}

// sameJSON reports whether v encodes to the same JSON value as raw.
func sameJSON(t *testing.T, v any, raw json.RawMessage) bool {
	t.Helper()
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(v)
	b, _ := json.Marshal(want)
	return string(a) == string(b)
}

// TestResponsesFunctionCall: a function tool call round-trips on the
// Responses path: function_call item in, function_call_output out.
func TestResponsesFunctionCall(t *testing.T) {
	srv := llmfake.NewOpenAI(t,
		llmfake.Turn{ToolCalls: []llmfake.ToolCall{{ID: "call_1", Name: "read_webpages", Args: `{"urls":["https://example.com"]}`}}, ArgChunks: 3},
		llmfake.Turn{Text: "read it"})
	p := newProvider(t, srv, onOpenAI)
	req := searchRequest("read example.com")
	resp, rec := stream(t, p, req)
	if names, _ := rec.joined(llm.DeltaToolCall); names != "read_webpages" {
		t.Errorf("tool call deltas = %q", names)
	}
	calls := resp.Message.ToolCalls()
	if resp.StopReason != llm.StopToolUse || len(calls) != 1 || calls[0].ToolCallID != "call_1" ||
		string(calls[0].Input) != `{"urls":["https://example.com"]}` {
		t.Fatalf("turn = %+v", resp)
	}
	req.Messages = append(req.Messages, resp.Message,
		llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("call_1", "page text", false)}})
	resp, _ = stream(t, p, req)
	if resp.Message.TextContent() != "read it" {
		t.Errorf("second turn = %+v", resp.Message)
	}
	sent := inputItems(t, srv.Requests()[1])
	if len(sent) != 3 || sent[1]["type"] != "function_call" || sent[1]["call_id"] != "call_1" || sent[1]["id"] != "fc_fake_1_0" ||
		sent[2]["type"] != "function_call_output" || sent[2]["call_id"] != "call_1" || sent[2]["output"] != "page text" {
		t.Errorf("input items = %v", sent)
	}
}

// TestResponsesOnlyWithSearch: on OpenAI's endpoint, a request that does
// not offer the provider's search stays on chat completions, and a
// compatible server never uses the Responses API.
func TestResponsesOnlyWithSearch(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "a"}, llmfake.Turn{Text: "b"})
	stream(t, newProvider(t, srv, onOpenAI), simpleRequest())
	stream(t, newProvider(t, srv), searchRequest("x"))
	for i, r := range srv.Requests() {
		if r.Path != "/v1/chat/completions" {
			t.Errorf("request %d went to %s", i, r.Path)
		}
		if _, ok := r.Body["plugins"]; ok {
			t.Errorf("request %d carries plugins: %s", i, r.Raw)
		}
	}
}

// TestResponsesCut: a stream that ends before response.completed is a
// cut stream (retried), not a turn.
func TestResponsesCut(t *testing.T) {
	srv := llmfake.NewOpenAI(t, llmfake.Turn{Text: "a few words here", CutAfter: 4})
	_, err := newProvider(t, srv, onOpenAI).Stream(t.Context(), searchRequest("x"), nil)
	if !errors.Is(err, llm.ErrStreamCut) {
		t.Errorf("cut stream: %v, want ErrStreamCut", err)
	}
}

// TestOpenRouterWebPlugin: on OpenRouter's endpoint the provider's
// search is the web plugin, on a request whose last message is the
// user's text only; the answer's url_citation annotations become
// citations, the search is shown, recorded as a server tool and counted.
func TestOpenRouterWebPlugin(t *testing.T) {
	srv := llmfake.NewOpenAI(t,
		llmfake.Turn{Text: "It costs $0.006 per minute.", Usage: llm.Usage{InputTokens: 50, OutputTokens: 8},
			Citations: []llmfake.Cite{{URL: "https://example.com/pricing", Title: "Pricing", CitedText: "$0.006 per minute"}}},
		llmfake.Turn{Text: "done"})
	p := newProvider(t, srv, func(c *openai.Config) { c.Name, c.ServerSearch = "openrouter", openai.SearchWebPlugin })
	req := searchRequest("pricing?")
	resp, rec := stream(t, p, req)
	plugins, _ := json.Marshal(srv.Requests()[0].Body["plugins"])
	if string(plugins) != `[{"engine":"exa","id":"web","max_results":5}]` {
		t.Errorf("plugins = %s", plugins)
	}
	if _, n := rec.joined(llm.DeltaServerTool); n != 1 {
		t.Errorf("search activity deltas = %d", n)
	}
	if c := resp.Message.Citations(); len(c) != 1 || c[0].URL != "https://example.com/pricing" || c[0].CitedText != "$0.006 per minute" {
		t.Errorf("citations = %+v", c)
	}
	if b := resp.Message.Content; len(b) != 3 || b[0].Type != llm.BlockServerToolUse || b[1].Type != llm.BlockServerToolResult ||
		b[0].Provider != "openrouter" || len(b[1].Citations) != 1 {
		t.Errorf("blocks = %+v", b)
	}
	if resp.Usage.WebSearches != 1 || resp.Usage.InputTokens != 50 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	// A request sending tool results back carries no plugin: it would
	// search (and bill) again on every iteration of the loop.
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c1", ToolName: "read_webpages", Input: json.RawMessage(`{}`)}}},
		llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("c1", "page", false)}})
	resp, _ = stream(t, p, req)
	if _, ok := srv.Requests()[1].Body["plugins"]; ok || resp.Usage.WebSearches != 0 {
		t.Errorf("tool-result request carried the plugin: %s", srv.Requests()[1].Raw)
	}
	msgs, _ := json.Marshal(srv.Requests()[1].Body["messages"])
	if strings.Contains(string(msgs), "server_tool") {
		t.Errorf("server blocks sent on chat completions: %s", msgs)
	}
}

// TestResponsesFailedEvent: response.failed and error events are the
// API's errors, their status inferred from the code (a rate limit is
// retryable, an invalid prompt is not).
func TestResponsesFailedEvent(t *testing.T) {
	for _, tc := range []struct {
		event  string
		status int
	}{
		{`event: response.failed` + "\n" + `data: {"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"failed","output":[],"error":{"code":"rate_limit_exceeded","message":"slow down"}}}`, 429},
		{`event: error` + "\n" + `data: {"type":"error","sequence_number":1,"code":"invalid_prompt","message":"bad prompt","param":null}`, 400},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "%s\n\n", tc.event)
		}))
		p, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), ServerSearch: openai.SearchResponses})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Stream(t.Context(), searchRequest("x"), nil)
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
			t.Errorf("%s: err = %v, want an APIError with status %d", tc.event[:25], err, tc.status)
		}
		p.CloseIdleConnections()
		srv.Close()
	}
}

// TestFakeResponsesNonStreaming checks the fake's non-streamed Responses
// answer against the SDK's own decoder.
func TestFakeResponsesNonStreaming(t *testing.T) {
	srv := llmfake.NewOpenAI(t, searchTurn)
	svc := responses.NewResponseService(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"),
		option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
	resp, err := svc.New(t.Context(), responses.ResponseNewParams{Model: "gpt-5",
		Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("hi")}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if len(resp.Output) != 3 || resp.Usage.InputTokens != 140 || resp.Usage.InputTokensDetails.CachedTokens != 40 {
		t.Fatalf("response = %s", resp.RawJSON())
	}
	if ws := resp.Output[1].AsWebSearchCall(); ws.ID != "ws_fake_1_0" || ws.Action.Query != "podcast transcription pricing" {
		t.Errorf("web_search_call = %s", resp.Output[1].RawJSON())
	}
	msg := resp.Output[2].AsMessage()
	if ann := msg.Content[0].Annotations; len(ann) != 1 || ann[0].URL != "https://example.com/pricing" || ann[0].StartIndex != 20 {
		t.Errorf("message = %s", resp.Output[2].RawJSON())
	}
	if resp.OutputText() != searchTurn.Text {
		t.Errorf("output text = %q", resp.OutputText())
	}
}
