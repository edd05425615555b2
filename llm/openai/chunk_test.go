package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"
)

// chunkView is what the accumulator reads of a chunk, however decoded.
type chunkView struct {
	ID       string
	Model    string
	HasUsage bool
	Usage    [4]int64
	Choices  []choiceView
}

type choiceView struct {
	Index                               int64
	Finish, Content, Refusal, Reasoning string
	Annotations                         int
	Calls                               []callView
}

type callView struct {
	HasIndex       bool
	Index          int64
	ID, Name, Args string
}

// viewSDK reads a chunk as the SDK's ChatCompletionChunk, the way the
// accumulator read it before.
func viewSDK(c sdk.ChatCompletionChunk) chunkView {
	v := chunkView{ID: c.ID, Model: c.Model, HasUsage: c.JSON.Usage.Valid()}
	if v.HasUsage {
		u := c.Usage
		v.Usage = [4]int64{u.PromptTokens, u.CompletionTokens, u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CacheWriteTokens}
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		cv := choiceView{Index: ch.Index, Finish: ch.FinishReason, Content: d.Content, Refusal: d.Refusal}
		for _, name := range []string{"reasoning_content", "reasoning"} {
			f, ok := d.JSON.ExtraFields[name]
			var s string
			if ok && f.Raw() != "" && f.Raw() != "null" && json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				cv.Reasoning = s
				break
			}
		}
		if f, ok := d.JSON.ExtraFields["annotations"]; ok {
			cv.Annotations = len(annotations(f.Raw()))
		}
		for _, tc := range d.ToolCalls {
			cv.Calls = append(cv.Calls, callView{tc.JSON.Index.Valid(), tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
		v.Choices = append(v.Choices, cv)
	}
	return v
}

// viewDirect reads a chunk as chatChunk, the way the accumulator does.
func viewDirect(c chatChunk) chunkView {
	v := chunkView{ID: c.ID, Model: c.Model, HasUsage: c.Usage != nil}
	if v.HasUsage {
		u := c.Usage
		v.Usage = [4]int64{u.PromptTokens, u.CompletionTokens, u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CacheWriteTokens}
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		cv := choiceView{Index: ch.Index, Finish: ch.FinishReason, Content: d.Content, Refusal: d.Refusal, Reasoning: reasoning(d)}
		if d.Annotations != nil {
			cv.Annotations = len(annotations(string(d.Annotations)))
		}
		for _, tc := range d.ToolCalls {
			cv.Calls = append(cv.Calls, callView{tc.Index != nil, deref(tc.Index), tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
		v.Choices = append(v.Choices, cv)
	}
	return v
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestChunkDecodingMatchesSDK: every chunk of the wire's shapes (OpenAI's,
// OpenRouter's, DeepSeek's, Ollama's, llama.cpp's, with nulls and missing
// fields) reads the same decoded into chatChunk as into the SDK's
// ChatCompletionChunk.
func TestChunkDecodingMatchesSDK(t *testing.T) {
	chunks := []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`,
		`{"id":"c","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hel\"lo \u2028 <>"},"finish_reason":null}],"usage":null}`,
		`{"id":"c","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":""}}]}}]}`,
		`{"id":"c","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\":"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":null,"id":null,"function":{"name":null,"arguments":null}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4,"cache_write_tokens":2}}}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":null}}`,
		`{"model":"deepseek","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"think"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":null,"reasoning":"or"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"second"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning":{"not":"text"}}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"x","annotations":[{"type":"url_citation","url_citation":{"url":"https://a","title":"A","start_index":0,"end_index":1}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"annotations":null}}]}`,
		`{"choices":[{"index":1,"delta":{"content":"second choice"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":"content_filter"}]}`,
		`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"日本 \ud83d\ude42"},"finish_reason":"length","native_finish_reason":"MAX_TOKENS"}],"provider":"x"}`,
		`{}`,
		// Unexpected JSON types, which the SDK's decoder takes.
		`{"id":7,"choices":[{"index":0,"delta":{"content":5}}]}`,
		`{"choices":[{"index":"0","delta":{"content":"a","tool_calls":[{"index":"1","id":"c","function":{"name":"f","arguments":{"a":1}}}]}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{"content":"a","reasoning":"r"}}],"usage":{"prompt_tokens":1.0,"completion_tokens":"2"}}`,
		`{"choices":{"a":1},"usage":{"prompt_tokens":3}}`,
	}
	for i, raw := range chunks {
		var s sdk.ChatCompletionChunk
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatalf("chunk %d: SDK: %v", i, err)
		}
		var d chatChunk
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if diff := cmp.Diff(viewSDK(s), viewDirect(d)); diff != "" {
			t.Errorf("chunk %d %s (-SDK +direct):\n%s", i, raw, diff)
		}
	}
}
