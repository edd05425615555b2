package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// processScript has the orchestrator run a command that declares a
// 90-second timeout, then say what it printed.
const processScript = `conversations:
  - replies:
      - when: {result: {}}
        text: "The command said: {{last_result}}"
      - tool_calls: [{name: run_bash, args: {command: "make all", timeout_seconds: 90}}]
`

// recordingBash is a run_bash that records the arguments it ran with.
type recordingBash struct {
	mu  sync.Mutex
	ran []json.RawMessage
}

func (b *recordingBash) Name() string            { return "run_bash" }
func (b *recordingBash) Description() string     { return "runs a command" }
func (b *recordingBash) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (b *recordingBash) Run(_ context.Context, args json.RawMessage) (tool.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ran = append(b.ran, args)
	return tool.Result{Output: "BUILT"}, nil
}

func (b *recordingBash) runs() []json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]json.RawMessage(nil), b.ran...)
}

// processService is a session service on real SQLite whose
// orchestrator's run_bash asks first (policy always) and whose turns
// have the given wall-clock timeout.
func processService(t *testing.T, timeout time.Duration) (*session.Service, *subagent.Manager, *recordingBash) {
	t.Helper()
	ctx := context.Background()
	sc, err := scripted.Parse("t", []byte(processScript))
	if err != nil {
		t.Fatal(err)
	}
	cat := llm.NewCatalog(nil)
	cat.Add(scripted.NewWithScript(sc), map[string]string{"sonnet": "t", "haiku": "t", "opus": "t"})
	model, err := cat.Resolve("scripted/t")
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, t.TempDir()+"/ava.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hub := event.NewHub(st)
	owner, err := instance.Start(ctx, instance.Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := confirm.ParsePolicy("always")
	if err != nil {
		t.Fatal(err)
	}
	empty, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m := subagent.NewManager(subagent.Options{Catalog: cat, Tools: empty, Store: st, Hub: hub, MaxConcurrent: 1, StallAfter: -1,
		Workspace: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Owner: owner, Confirm: policy, ExpireEvery: time.Hour})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	bash := &recordingBash{}
	reg, err := tool.NewRegistry(m.ConfirmProcesses(bash, time.Minute, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	history := &memHistory{msgs: map[string][]llm.Message{}}
	svc := session.New(session.Config{Hub: hub, Subagents: m, Logger: slog.New(slog.DiscardHandler),
		Orchestrator: func(string, session.Limits) (*orchestrator.Orchestrator, llm.Model, error) {
			return orchestrator.New(orchestrator.Config{Model: model, Hub: hub, History: history, Tools: reg,
				Limits: session.Limits{Timeout: timeout}}), model, nil
		}})
	t.Cleanup(func() {
		svc.Close()
		m.Close()
		owner.Close()
		st.Close()
	})
	return svc, m, bash
}

// waitingProposal waits for the session's one pending process proposal.
func waitingProposal(t *testing.T, m *subagent.Manager, key string) subagent.Proposal {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ps, err := m.Proposals(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 1 {
			if ps[0].Kind != subagent.KindProcess {
				t.Fatalf("proposal %+v, want kind process", ps[0])
			}
			return ps[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no process proposal")
	return subagent.Proposal{}
}

// TestTypedAnswerDecidesTheWaitingProcess: while a turn waits for the
// person's answer to its long run_bash, a message to the session is that
// answer, whatever the channel's options (refused as busy, queued or
// merged otherwise): an unclear one is asked again and runs nothing,
// "yes but only 30 seconds" runs the call with that timeout and the
// waiting turn answers with its output, "no" runs nothing. The turn's
// one-second wall-clock timeout does not run out while it waits.
func TestTypedAnswerDecidesTheWaitingProcess(t *testing.T) {
	const key = "ava:test:process"
	t.Run("yes with a change", func(t *testing.T) {
		svc, m, bash := processService(t, time.Second)
		turn, err := svc.Send(context.Background(), key, "build it", session.SendOptions{Merge: true})
		if err != nil {
			t.Fatal(err)
		}
		p := waitingProposal(t, m, key)
		// Busy (no options): the message would be refused without the
		// waiting proposal.
		unclear, err := svc.Send(context.Background(), key, "hmm, what does it do", session.SendOptions{})
		if err != nil {
			t.Fatalf("an answer while the turn waits: %v", err)
		}
		if res := wait(t, unclear); !strings.Contains(res.Text, "could not tell") || !strings.Contains(res.Text, "only 30 seconds") {
			t.Fatalf("unclear answer: %q", res.Text)
		}
		time.Sleep(1500 * time.Millisecond) // past the turn's timeout
		if len(bash.runs()) != 0 || len(pendingOf(t, m, key)) != 1 {
			t.Fatal("an unclear answer decided something, or the turn's timeout withdrew the proposal")
		}
		yes, err := svc.Send(context.Background(), key, "yes but only 30 seconds", session.SendOptions{Merge: true, Queue: true})
		if err != nil {
			t.Fatal(err)
		}
		if res := wait(t, yes); res.Text != "▶ Running the run_bash call ("+p.ID+") with timeout 30 s." {
			t.Fatalf("yes: %q", res.Text)
		}
		res := wait(t, turn)
		if res.Status != lifecycle.Success || res.Text != "The command said: BUILT" {
			t.Fatalf("the waiting turn: %+v", res)
		}
		if turn.Merged() {
			t.Fatal("the answer was merged into the waiting turn")
		}
		runs := bash.runs()
		if len(runs) != 1 || !strings.Contains(string(runs[0]), `"timeout_seconds":30`) {
			t.Fatalf("runs %s", runs)
		}
	})
	t.Run("no", func(t *testing.T) {
		svc, m, bash := processService(t, 0)
		turn, err := svc.Send(context.Background(), key, "build it", session.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := waitingProposal(t, m, key)
		no, err := svc.Send(context.Background(), key, "no thanks", session.SendOptions{Queue: true})
		if err != nil {
			t.Fatal(err)
		}
		if res := wait(t, no); res.Text != "OK, not running the run_bash call ("+p.ID+")." {
			t.Fatalf("no: %q", res.Text)
		}
		if res := wait(t, turn); !strings.Contains(res.Text, "declined") || len(bash.runs()) != 0 {
			t.Fatalf("the waiting turn after no: %+v, %d runs", res, len(bash.runs()))
		}
		// The session is idle again: a message is a new turn.
		if _, err := svc.Send(context.Background(), key, "again", session.SendOptions{}); errors.Is(err, session.ErrBusy) {
			t.Fatal(err)
		}
	})
}

// pendingOf lists the session's pending proposals.
func pendingOf(t *testing.T, m *subagent.Manager, key string) []subagent.Proposal {
	t.Helper()
	ps, err := m.Proposals(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
