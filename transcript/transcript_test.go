package transcript_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/transcript"
)

const brokenArgs = `{"path": "README.md",, "lines": 3`

// A model on the OpenAI wire sends tool-call arguments that are not valid
// JSON. The conversation must still be stored, read back, and sent to the
// model again with the arguments exactly as they were received.
func TestInvalidToolArgumentsSurviveStoreAndResume(t *testing.T) {
	srv := llmfake.NewOpenAI(t,
		llmfake.Turn{ToolCalls: []llmfake.ToolCall{{ID: "call_1", Name: "read_file", Args: brokenArgs}}, ArgChunks: 3},
		llmfake.Turn{Text: "done"},
	)
	p, err := openai.New(openai.Config{APIKey: "k", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	first := []llm.Message{llm.UserText("read the readme")}
	resp, err := p.Stream(t.Context(), &llm.Request{Model: "m", Messages: first}, nil)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	if calls := resp.Message.ToolCalls(); len(calls) != 1 || string(calls[0].Input) != brokenArgs {
		t.Fatalf("tool calls %+v, want one with the arguments as sent", calls)
	}
	conv := append(first, resp.Message, llm.Message{Role: llm.RoleUser,
		Content: []llm.Block{llm.ToolResult("call_1", "the arguments are not valid JSON", true)}})

	back := storeAndLoad(t, conv)
	if got := back[1].ToolCalls(); len(got) != 1 || string(got[0].Input) != brokenArgs {
		t.Fatalf("after the store: tool calls %+v", got)
	}

	if _, err := p.Stream(t.Context(), &llm.Request{Model: "m", Messages: back}, nil); err != nil {
		t.Fatalf("resumed turn: %v", err)
	}
	if got := sentArguments(t, srv.Requests()[1]); got != brokenArgs {
		t.Errorf("resumed request sent arguments %q, want %q", got, brokenArgs)
	}
}

// storeAndLoad writes conv through ToStore into a real store and reads it
// back through FromStore.
func storeAndLoad(t *testing.T, conv []llm.Message) []llm.Message {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ava.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const session = "ava:subagent:S-abcdef"
	msgs, err := transcript.ToStore(session, "S-abcdef", conv)
	if err != nil {
		t.Fatalf("ToStore: %v", err)
	}
	if err := st.AppendMessages(t.Context(), msgs); err != nil {
		t.Fatalf("AppendMessages: %v", err)
	}
	stored, err := st.Messages(t.Context(), session, 0)
	if err != nil {
		t.Fatal(err)
	}
	back, err := transcript.FromStore(stored)
	if err != nil {
		t.Fatalf("FromStore: %v", err)
	}
	if len(back) != len(conv) {
		t.Fatalf("read back %d messages, want %d", len(back), len(conv))
	}
	return back
}

// sentArguments digs the first assistant tool call's arguments out of an
// OpenAI chat request body.
func sentArguments(t *testing.T, req llmfake.Request) string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(req.Raw, &body); err != nil {
		t.Fatal(err)
	}
	for _, m := range body.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			return m.ToolCalls[0].Function.Arguments
		}
	}
	t.Fatalf("no assistant tool call in %s", req.Raw)
	return ""
}

// An attached image is stored by reference (its Ref and media type, not
// its bytes) and read back as such; an image kept nowhere else is stored
// whole.
func TestImagesAreStoredByReference(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n-some-bytes")
	msg := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text("look"), llm.Image("image/png", png, "A-0123456789ab"), llm.Image("image/gif", png, "")}}
	stored, err := transcript.ToStore("ava:test:x", store.SenderAva, []llm.Message{msg})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(stored[0].Blocks), base64.StdEncoding.EncodeToString(png)); n != 1 {
		t.Fatalf("the bytes are stored %d times, want once (the unreferenced image): %s", n, stored[0].Blocks)
	}
	if msg.Content[1].ImageData == nil {
		t.Fatal("ToStore changed the caller's message")
	}
	back, err := transcript.FromStore(stored)
	if err != nil {
		t.Fatal(err)
	}
	imgs := back[0].Images()
	if len(imgs) != 2 || imgs[0].Ref != "A-0123456789ab" || imgs[0].MediaType != "image/png" || imgs[0].ImageData != nil || !bytes.Equal(imgs[1].ImageData, png) {
		t.Fatalf("read back %+v", back[0].Content)
	}
}
