package subagent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// Seed 002's record of a run with a follow-up: each turn writes its own
// subagent:start before its subagent:complete, and the run's trace (its
// own stream) begins with SessionStart, each turn bracketed by
// SessionStart and SessionEnd. (Before: start, complete, complete; the
// trace began with the task's UserMessage.)
func TestFollowUpWritesItsOwnStartAndEachTurnBeginsWithSessionStart(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: first\n  - text: second\n", nil)
	ctx := context.Background()
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "look"})
	if _, err := hd.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.m.SendFollowUp(ctx, hd.ID(), "more", false, false); err != nil {
		t.Fatal(err)
	}
	var entries []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		entries = entries[:0]
		for _, e := range lifecycleEntries(t, h, hd.ID()) {
			entries = append(entries, string(e.EventType))
		}
		if len(entries) >= 4 || time.Now().After(deadline) {
			break
		}
	}
	want := []string{string(audit.SubagentStart), string(audit.SubagentComplete), string(audit.SubagentStart), string(audit.SubagentComplete)}
	if fmt.Sprint(entries) != fmt.Sprint(want) {
		t.Fatalf("lifecycle entries %v, want %v", entries, want)
	}
	if r := waitRun(t, h, hd.UUID()); r.Status != lifecycle.Success {
		t.Fatalf("run %s", r.Status)
	}
	evs, err := h.store.ReadEvents(ctx, store.SubagentSessionPrefix+hd.ID(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var brackets []event.Type
	for _, ev := range evs {
		if ev.Type == event.SessionStart || ev.Type == event.SessionEnd {
			brackets = append(brackets, ev.Type)
		}
	}
	if len(evs) == 0 || evs[0].Type != event.SessionStart ||
		fmt.Sprint(brackets) != fmt.Sprint([]event.Type{event.SessionStart, event.SessionEnd, event.SessionStart, event.SessionEnd}) {
		t.Fatalf("trace begins with %v; brackets %v", evs[0].Type, brackets)
	}
}
