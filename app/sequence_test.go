package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
)

// turnProcessEnv makes the test binary run one turn of seqSession on the
// data root it names, as `ava run --session K` does, and exit (see
// TestMain). turnNumberEnv says which turn of the session it is.
const (
	turnProcessEnv = "AVA_TEST_TURN_ROOT"
	turnNumberEnv  = "AVA_TEST_TURN_NUMBER"
	seqSession     = "ava:cli:seq"
)

// gated is the model of both the orchestrator ("gated/orch") and its
// subagents ("gated/sub"). The orchestrator's first call of each turn
// spawns a background subagent, its second answers. A subagent answers
// only once the session's stream holds the turn's SessionEnd, so its
// SubagentComplete is published after the turn's last event every time,
// by synchronisation rather than a delay.
type gated struct {
	hub  *event.Hub
	turn int // the session's turn this process runs, from 1
}

func (g *gated) Name() string { return "gated" }

func (g *gated) Stream(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
	answer := func(text string, calls ...llm.Block) *llm.Response {
		msg := llm.Message{Role: llm.RoleAssistant, Content: append([]llm.Block{llm.Text(text)}, calls...)}
		stop := llm.StopEndTurn
		if len(calls) > 0 {
			stop = llm.StopToolUse
		}
		return &llm.Response{Message: msg, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}, StopReason: stop, Model: req.Model}
	}
	if req.Model == "sub" {
		if err := g.waitTurnEnd(ctx); err != nil {
			return nil, err
		}
		return answer("late result"), nil
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleUser && len(last.Content) > 0 && last.Content[0].Type == llm.BlockToolResult {
		return answer("answered before the subagent ended"), nil
	}
	call := llm.Block{Type: llm.BlockToolCall, ToolCallID: fmt.Sprintf("call-%d", g.turn), ToolName: "spawn_subagent",
		Input: json.RawMessage(`{"role":"researcher","task":"late task","model":"gated/sub","background":true}`)}
	return answer("delegating", call), nil
}

// waitTurnEnd waits until the session's stream holds this process's
// turn's SessionEnd (the turn-th).
func (g *gated) waitTurnEnd(ctx context.Context) error {
	sub := g.hub.Subscribe(seqSession, 0)
	ends := 0
	for ends < g.turn {
		evs, err := sub.Next(ctx)
		if err != nil {
			return fmt.Errorf("wait for the turn's end: %w", err)
		}
		for _, ev := range evs {
			if ev.Type == event.SessionEnd {
				ends++
			}
		}
	}
	return nil
}

// runTurn opens Ava on root, runs one message in seqSession on the gated
// model and waits for the background subagent it leaves, as `ava run
// --session` does before it exits.
func runTurn(root string, turn int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := config.Load(func(k string) string {
		// Quiet: this test is about the numbers of the turns and the
		// subagents; a report turn would race the instance's close.
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_CONFIRM": "never", "AVA_ON_COMPLETE": "quiet"}[k]
	})
	if err != nil {
		return err
	}
	in, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer in.Close()
	in.Catalog.Add(&gated{hub: in.Hub, turn: turn}, map[string]string{})
	t, err := in.Sessions.Send(ctx, seqSession, fmt.Sprintf("message %d", turn), session.SendOptions{Model: "gated/orch"})
	if err != nil {
		return err
	}
	res, err := t.Wait(ctx)
	if err != nil {
		return err
	}
	if res.Status != "success" {
		return fmt.Errorf("turn %d: %s (%s)", turn, res.Status, res.Error)
	}
	// Each turn left one background subagent. This turn's answers once
	// the turn's SessionEnd is stored, so it may end before Wait returns
	// (the turn still stores its messages and announces held results):
	// wait for each one still running, and check every one succeeded.
	runs, err := in.Subagent.Runs(ctx, subagent.RunFilter{Session: seqSession})
	if err != nil {
		return err
	}
	if len(runs) != turn {
		return fmt.Errorf("turn %d: the session has %d background subagents, want %d", turn, len(runs), turn)
	}
	for _, run := range runs {
		h, err := in.Subagent.Get(run.ID)
		if err != nil {
			return err
		}
		r, err := h.Wait(ctx)
		if err != nil {
			return err
		}
		if r.Status != "success" {
			return fmt.Errorf("background subagent %s: %s (%s)", run.ID, r.Status, r.Error)
		}
	}
	return nil
}

// turnProcess runs runTurn for a parent test and returns the exit code.
func turnProcess() int {
	n, _ := strconv.Atoi(os.Getenv(turnNumberEnv))
	if err := runTurn(os.Getenv(turnProcessEnv), n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A session's sequence numbers go on across processes when each turn
// leaves a background subagent whose SubagentComplete reaches the session
// after the turn's last event (issue 9: it used to reuse the turn's last
// number): two turns in two processes number the session 1..N, with no
// number reused or skipped.
func TestSessionSequenceAcrossProcessesWithBackgroundSubagents(t *testing.T) {
	root := t.TempDir()
	// The first turn runs in a second process, the second in this one.
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), turnProcessEnv+"="+root, turnNumberEnv+"=1")
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("first turn's process: %v\n%s", err, out)
	}
	if err := runTurn(root, 2); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(root, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.ReadEvents(context.Background(), seqSession, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []event.Type
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("stored event %d (%s) is #%d: numbers reused or skipped", i, ev.Type, ev.Seq)
		}
		switch ev.Type {
		case event.SessionStart, event.SessionEnd, event.SubagentSpawn, event.SubagentComplete:
			order = append(order, ev.Type)
		}
	}
	// Each turn: its start, the spawn, its end, then the subagent's end.
	turn := []event.Type{event.SessionStart, event.SubagentSpawn, event.SessionEnd, event.SubagentComplete}
	want := append(append([]event.Type(nil), turn...), turn...)
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("session events %v, want %v", order, want)
	}
}
