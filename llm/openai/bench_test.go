package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// benchRequest is a subagent's request as Ava sends it mid-run: a system
// prompt, ten tools with schemas of a few properties, the task, a tool
// call and its result (about 2 KB of JSON).
func benchRequest() *llm.Request {
	req := &llm.Request{
		Model:  "gpt-test",
		System: strings.Repeat("You are a subagent working in a repository. Use the tools. ", 8),
		Messages: []llm.Message{
			llm.UserText("Find where the configuration is loaded and say which file sets the \"data root\"."),
			{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockText, Text: "Looking."},
				{Type: llm.BlockToolCall, ToolCallID: "call_1", ToolName: "grep", Input: json.RawMessage(`{"pattern":"DataRoot","path":"."}`)}}},
			{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: "call_1", Content: "config/config.go:42: DataRoot string\nconfig/load.go:17: c.DataRoot = os.Getenv(\"AVA_DATA_ROOT\")"}}},
		},
	}
	for i := range 10 {
		req.Tools = append(req.Tools, llm.ToolDef{
			Name:        fmt.Sprintf("tool_%d", i),
			Description: "Reads, searches or edits files of the workspace; see the parameters.",
			Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"A path in the workspace"},` +
				`"pattern":{"type":"string","description":"A regular expression"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`),
		})
	}
	return req
}

// BenchmarkRequestBody builds and encodes benchRequest's body: directly
// (what Stream does) and through the SDK's params marshalled by
// reflection (what it did). With -benchtime=1x in a fresh process each,
// it gives the first request's cost.
func BenchmarkRequestBody(b *testing.B) {
	p, err := New(Config{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.chatBody(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			params, err := p.params(req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := params.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStreamCall is one Stream of benchRequest against the
// in-process fake, answered with twenty text chunks and a tool call; it
// reports the process's CPU per call (the fake's side included).
func BenchmarkStreamCall(b *testing.B) {
	srv := llmfake.NewOpenAI(b)
	srv.Respond = func(llmfake.Request) llmfake.Turn {
		return llmfake.Turn{Text: strings.Repeat("word ", 20), ToolCalls: []llmfake.ToolCall{{ID: "c", Name: "tool_1", Args: `{"path":"a"}`}},
			Usage: llm.Usage{InputTokens: 500, OutputTokens: 30}}
	}
	p, err := New(Config{BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := p.Stream(b.Context(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
