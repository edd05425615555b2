package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/avaagent/ava/llm"
)

// odd holds strings a body must escape exactly as the SDK does: quotes,
// backslashes, every control character, <>&, invalid UTF-8, U+2028 and
// U+2029, DEL, non-ASCII text.
var odd = []string{
	`say "hi" \ there`,
	"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f",
	"<script>a && b</script> > c",
	"bad \xff utf8 \xe2\x80 cut \xc3",
	"line\u2028sep\u2029par",
	"del \x7f, é, 日本, 🙂, \ufeff",
	"",
}

// randomString mixes the characters of odd and plain text.
func randomString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(6) {
		s := odd[r.IntN(len(odd))]
		if s != "" {
			i := r.IntN(len(s))
			b.WriteString(s[i:min(len(s), i+1+r.IntN(8))])
		}
		b.WriteString("abc"[:r.IntN(4)])
	}
	return b.String()
}

// randomRequest is a request of every shape the writer has: system
// prompt or not, text, tool calls (with and without input), tool results
// (failed or not) mixed with text, thinking, tools with odd schemas.
func randomRequest(r *rand.Rand) *llm.Request {
	req := &llm.Request{Model: "m-" + randomString(r), MaxTokens: r.IntN(3) * 50}
	if r.IntN(2) == 0 {
		req.System = randomString(r)
	}
	for range r.IntN(6) {
		var blocks []llm.Block
		for range r.IntN(4) {
			switch r.IntN(6) {
			case 0, 1:
				blocks = append(blocks, llm.Block{Type: llm.BlockText, Text: randomString(r)})
			case 5:
				if role := r.IntN(2); role == 0 {
					blocks = append(blocks, llm.Image("image/png", []byte(randomString(r)+"png"), "A-"+randomString(r)))
				}
			case 2:
				blocks = append(blocks, llm.Block{Type: llm.BlockToolResult, ToolCallID: "id" + randomString(r), Content: randomString(r), IsError: r.IntN(2) == 0})
			default:
				blocks = append(blocks, llm.Block{Type: llm.BlockToolCall, ToolCallID: "c" + randomString(r), ToolName: "t" + randomString(r)})
				if r.IntN(2) == 0 {
					in, _ := json.Marshal(map[string]string{"a": randomString(r)})
					blocks[len(blocks)-1].Input = in
				}
			}
		}
		role := llm.RoleUser
		if r.IntN(2) == 0 {
			role = llm.RoleAssistant
			blocks = append(blocks, llm.Block{Type: llm.BlockThinking, Text: "hmm"})
		}
		m := llm.Message{Role: role}
		for _, b := range blocks {
			// A user message carries no tool calls, an assistant's no
			// results and no images.
			if (role == llm.RoleUser) != (b.Type == llm.BlockToolCall) && (role == llm.RoleUser || b.Type != llm.BlockImage) {
				m.Content = append(m.Content, b)
			}
		}
		req.Messages = append(req.Messages, m)
	}
	for i := range r.IntN(4) {
		d := llm.ToolDef{Name: fmt.Sprintf("tool%d", i), Description: randomString(r)}
		switch r.IntN(3) {
		case 0:
			d.Schema = json.RawMessage(fmt.Sprintf(" {\n \"type\": \"object\",\n \"properties\": {\"p\": {\"type\": \"string\", \"description\": %q}}}\n", randomString(r)))
		case 1:
			d.Schema = json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer","description":"<a> & \u2028"}},"required":["x"]}`)
		}
		req.Tools = append(req.Tools, d)
	}
	if r.IntN(3) == 0 {
		req.ServerTools = &llm.ServerTools{WebSearch: true}
	}
	if r.IntN(3) == 0 {
		req.Messages = append(req.Messages, llm.UserText(randomString(r)+"?"))
	}
	return req
}

// sdkBody is the body the SDK sends for req: its params, marshalled by
// NewStreaming, caught before they leave.
func sdkBody(t *testing.T, p *Provider, req *llm.Request) ([]byte, http.Header, error) {
	t.Helper()
	params, err := p.params(req)
	if err != nil {
		return nil, nil, err
	}
	sent, header := capture()
	chat := sdk.NewChatCompletionService(p.opts...)
	stream := chat.NewStreaming(t.Context(), params, option.WithMiddleware(sent))
	_ = stream.Close()
	return *header.body, header.header, nil
}

// caught is a request a capture middleware stopped.
type caught struct {
	body   *[]byte
	header http.Header
}

var errCaught = errors.New("caught")

// capture returns a middleware that records a request and fails it.
func capture() (option.Middleware, *caught) {
	c := &caught{body: new([]byte)}
	return func(r *http.Request, _ option.MiddlewareNext) (*http.Response, error) {
		*c.body, _ = io.ReadAll(r.Body)
		c.header = r.Header.Clone()
		return nil, errCaught
	}, c
}

// directBody is the body and headers Stream sends for req.
func directBody(t *testing.T, p *Provider, req *llm.Request) ([]byte, http.Header, error) {
	t.Helper()
	sent, c := capture()
	q := *p
	q.opts = append(p.opts[:len(p.opts):len(p.opts)], option.WithMiddleware(sent))
	_, err := q.Stream(t.Context(), req, nil)
	if c.header == nil {
		return nil, nil, err
	}
	if !errors.Is(err, errCaught) {
		t.Fatalf("Stream: %v, want the capture's error", err)
	}
	return *c.body, c.header, nil
}

// TestChatBodyMatchesSDK: Stream sends, for many requests of every
// shape and on every kind of endpoint, the very bytes and headers the
// SDK's NewStreaming sends for the params it was built from before; a
// request the SDK path refuses is refused with the same error.
func TestChatBodyMatchesSDK(t *testing.T) {
	configs := []Config{
		{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1"},
		{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1", MaxTokens: 7, ServerSearch: SearchWebPlugin, Headers: map[string]string{"X-Title": "ava"}},
		{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1", MaxTokens: 9, ServerSearch: SearchResponses},
	}
	r := rand.New(rand.NewPCG(29, 1))
	var reqs []*llm.Request
	for range 300 {
		reqs = append(reqs, randomRequest(r))
	}
	for _, s := range odd {
		reqs = append(reqs, &llm.Request{Model: s + "m", System: s, Messages: []llm.Message{llm.UserText(s),
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: s}, {Type: llm.BlockToolCall, ToolCallID: s + "c", ToolName: s + "n", Input: json.RawMessage(`{"s":` + string(mustJSON(s)) + `}`)}}},
			{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: s + "c", Content: s, IsError: true}}}},
			Tools: []llm.ToolDef{{Name: s + "n", Description: s}}})
	}
	seen := map[string]bool{}
	for i, c := range configs {
		p, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for j, req := range append(reqs, badRequests()...) {
			if req != nil && req.ServerTools != nil && c.ServerSearch == SearchResponses {
				r := *req // the Responses API's, not chat completions'
				r.ServerTools = nil
				req = &r
			}
			want, wantHeader, wantErr := sdkBody(t, p, req)
			got, gotHeader, gotErr := directBody(t, p, req)
			if wantErr != nil || gotErr != nil {
				if wantErr == nil || gotErr == nil || !strings.Contains(gotErr.Error(), wantErr.Error()) {
					t.Errorf("config %d, request %d: error %v, SDK path %v", i, j, gotErr, wantErr)
				}
				continue
			}
			for _, part := range covered {
				seen[part] = seen[part] || bytes.Contains(got, []byte(part))
			}
			if !bytes.Equal(got, want) {
				t.Errorf("config %d, request %d:\n got %s\nwant %s", i, j, got, want)
			}
			if fmt.Sprint(gotHeader) != fmt.Sprint(wantHeader) {
				t.Errorf("config %d, request %d: headers\n got %v\nwant %v", i, j, gotHeader, wantHeader)
			}
		}
	}

	for _, part := range covered {
		if !seen[part] {
			t.Errorf("no request's body has %s", part)
		}
	}
}

// covered are parts of a body the requests of TestChatBodyMatchesSDK
// must have produced.
var covered = []string{`"role":"system"`, `"role":"tool"`, `"content":"ERROR: `, `"tool_calls":[`, `"arguments":"{}"`,
	`"max_tokens":`, `"max_completion_tokens":`, `"plugins":[`, `"type":"image_url"`, `"type":"text"`, `"tools":[`, `"description":`, `\u2028`, `\ufffd`, `\u003c`, `\u0000`}

// badRequests are requests both paths must refuse.
func badRequests() []*llm.Request {
	user := []llm.Message{llm.UserText("x")}
	return []*llm.Request{
		nil,
		{Messages: user},
		{Model: "m", MaxTokens: -1, Messages: user},
		{Model: "m", Messages: []llm.Message{{Role: "system", Content: []llm.Block{{Type: llm.BlockText, Text: "x"}}}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, Content: "r"}}}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c", ToolName: "t"}}}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c"}}}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: "c"}}}}},
		{Model: "m", Messages: user, Tools: []llm.ToolDef{{Name: "t", Schema: json.RawMessage(`[1]`)}}},
		{Model: "m", Messages: user, Tools: []llm.ToolDef{{Name: "t", Schema: json.RawMessage(`{"a":`)}}},
		{Model: "m", Messages: user, Tools: []llm.ToolDef{{Schema: json.RawMessage(`{}`)}}},
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
