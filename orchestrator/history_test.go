package orchestrator_test

import (
	"context"
	"testing"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

func TestHistoryMergesAndOrdersToolResultsFirst(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/ava.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := orchestrator.StoreHistory{Store: st}
	ctx := context.Background()
	call := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolCall, ToolCallID: "c1", ToolName: "x"}}}
	if err := h.Save(ctx, "s", []llm.Message{llm.UserText("q"), call}); err != nil {
		t.Fatal(err)
	}
	// A [Subagent] message lands between the call and its result.
	if _, err := st.AppendMessage(ctx, store.Message{SessionKey: "s", Role: store.RoleSubagent, Sender: store.SenderSubagent, Text: "[Task: t] done"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Save(ctx, "s", []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("c1", "ok", false)}}}); err != nil {
		t.Fatal(err)
	}
	msgs, err := h.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[2].Role != llm.RoleUser || msgs[2].Content[0].Type != llm.BlockToolResult || msgs[2].Content[1].Text != "[Task: t] done" {
		t.Fatalf("%+v", msgs)
	}
	// A window that starts mid-exchange is trimmed to a clean start.
	msgs, _ = orchestrator.StoreHistory{Store: st, Limit: 2}.Load(ctx, "s")
	if len(msgs) != 0 {
		t.Fatalf("window opened mid tool exchange: %+v", msgs)
	}
}
