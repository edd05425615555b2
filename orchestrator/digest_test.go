package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
)

// Background results beyond the history window all reach the next
// prompt, each exactly once: the window's whole, the rest in a digest
// naming each subagent with its status and summary; the turn after does
// not get the digest again.
func TestEveryBackgroundResultReachesTheNextPromptOnce(t *testing.T) {
	for _, n := range []int{250, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h := newTurnHarness(t, false, nil)
			ctx := context.Background()
			const session = "ava:test:many"
			if _, err := h.o.Ask(ctx, session, "", "start the batch"); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				announceRun(t, h.store, session, i)
			}
			if _, err := h.o.Ask(ctx, session, "", "what came back?"); err != nil {
				t.Fatal(err)
			}
			reqs := h.model.requests()
			prompt := joined(reqs[len(reqs)-1].Messages)
			missing, twice := 0, 0
			for i := range n {
				switch c := strings.Count(prompt, shortID(i)+" "); {
				case c == 0:
					missing++
				case c > 1:
					twice++
				}
			}
			if missing > 0 || twice > 0 {
				t.Fatalf("%d of %d results missing from the next prompt, %d given more than once", missing, n, twice)
			}
			digested := strings.Count(prompt, "status=success: task: task ")
			t.Logf("%d results, a window of %d messages: %d whole in the window, %d in the digest; prompt %d bytes", n, orchestrator.DefaultHistoryLimit, n-digested, digested, len(prompt))
			if !strings.Contains(prompt, "summary: found thing 0") || !strings.Contains(prompt, "subagent_status") {
				t.Fatalf("the digest lacks the summaries or the way to the full results")
			}
			if !strings.HasSuffix(prompt, "what came back?") || !strings.HasPrefix(prompt, "[Subagent] ") {
				t.Fatalf("prompt does not open with the results digest and end with the request")
			}
			// Seen once: the next turn has the window only.
			if _, err := h.o.Ask(ctx, session, "", "thanks"); err != nil {
				t.Fatal(err)
			}
			reqs = h.model.requests()
			if last := joined(reqs[len(reqs)-1].Messages); strings.Contains(last, "arrived since your last answer") {
				t.Fatalf("the digest was given again")
			}
		})
	}
}

func shortID(i int) string { return fmt.Sprintf("S-%06x", i+1) }

// announceRun records the ith finished background run of the session
// and announces its result in the subagent manager's format.
func announceRun(t *testing.T, st *sqlite.Store, session string, i int) {
	t.Helper()
	ctx := context.Background()
	id := fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1)
	run := store.Run{ID: id, ShortID: shortID(i), SessionKey: store.SubagentSessionPrefix + shortID(i),
		ParentSession: session, ParentAgent: event.OrchestratorID, Mode: store.ModeSingle, Role: "researcher", Task: fmt.Sprintf("task %d", i),
		Model: "fake/m", Config: json.RawMessage(`{}`), Status: lifecycle.Running, StartedAt: &clock}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := st.TransitionRun(ctx, id, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, &store.RunFinish{Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("[Task: task %d]\nSubagent %s finished: status=success, 3s, 100 tokens, 0.10¢\nSummary: found thing %d\nOutput (text):\nthe long output of %d\n",
		i, shortID(i), i, i)
	blocks, _ := json.Marshal(llm.UserText("[Subagent] " + text))
	msg := store.Message{SessionKey: session, Role: store.RoleSubagent, Sender: store.SenderSubagent, Text: text, Blocks: blocks, RunID: id}
	if ok, err := st.AnnounceResult(ctx, id, "", msg); err != nil || !ok {
		t.Fatalf("announce %d: %v %v", i, ok, err)
	}
}
