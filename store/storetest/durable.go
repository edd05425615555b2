package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// closeStore closes s, failing the test on error.
func closeStore(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func testReopenKeepsEverything(t *testing.T, reopen func() store.Store) {
	s := reopen()
	const key = "ava:cli:keep"
	must(t, s.SetSessionBudget(ctx(t), key, 40))
	must(t, s.AddSessionSpend(ctx(t), key, store.Spend{Model: "m", Usage: event.Usage{CostCents: 2.5}}))
	ev := event.New(event.UserMessage, event.TextContent{Text: "hello"})
	ev.Session, ev.Seq, ev.Agent, ev.Time = key, 1, event.OrchestratorID, time.Now().UTC()
	must(t, s.AppendEvents(ctx(t), []event.Event{ev}))
	msg, err := s.AppendMessage(ctx(t), store.Message{SessionKey: key, Role: store.RoleUser, Text: "hello",
		Blocks: []byte(`{"role":"user","content":[{"type":"text","text":"hello"}]}`)})
	must(t, err)
	run := newRun("S-d0d0d0", key)
	run.Config = []byte(`{"timeout":"10m"}`)
	run = createRun(t, s, run)
	p := newPending("P-keep", key, time.Hour)
	must(t, s.CreatePending(ctx(t), p))
	mem, err := s.WriteMemory(ctx(t), store.Memory{Content: "the sky is blue", Tags: []string{"facts"}})
	must(t, err)
	sess, err := s.GetSession(ctx(t), key)
	must(t, err)
	closeStore(t, s)

	s = reopen()
	defer closeStore(t, s)
	gotSess, err := s.GetSession(ctx(t), key)
	must(t, err)
	if diff := cmp.Diff(sess, gotSess); diff != "" {
		t.Fatalf("session after reopen (-want +got):\n%s", diff)
	}
	evs, err := s.ReadEvents(ctx(t), key, 0, 0)
	must(t, err)
	if len(evs) != 1 || evs[0].Seq != 1 || string(evs[0].Content) != string(ev.Content) || !evs[0].Time.Equal(ev.Time.Truncate(time.Millisecond)) {
		t.Fatalf("events after reopen: %+v", evs)
	}
	msgs, err := s.Messages(ctx(t), key, 0)
	must(t, err)
	if diff := cmp.Diff([]store.Message{msg}, msgs); diff != "" {
		t.Fatalf("messages after reopen (-want +got):\n%s", diff)
	}
	gotRun, err := s.GetRun(ctx(t), "S-d0d0")
	must(t, err)
	if diff := cmp.Diff(run, gotRun); diff != "" {
		t.Fatalf("run after reopen (-want +got):\n%s", diff)
	}
	gotP, err := s.GetPending(ctx(t), "P-keep")
	must(t, err)
	if diff := cmp.Diff(p, gotP); diff != "" {
		t.Fatalf("pending spawn after reopen (-want +got):\n%s", diff)
	}
	found, err := s.SearchMemory(ctx(t), "sky", 0)
	must(t, err)
	if diff := cmp.Diff([]store.Memory{mem}, found); diff != "" {
		t.Fatalf("memory search after reopen (-want +got):\n%s", diff)
	}
	// The reopened store keeps working, and IDs keep increasing.
	msg2, err := s.AppendMessage(ctx(t), store.Message{SessionKey: key, Role: store.RoleAssistant, Text: "hi"})
	must(t, err)
	if msg2.ID <= msg.ID {
		t.Fatalf("message ID %d after reopen is not above %d", msg2.ID, msg.ID)
	}
}

// testAnnounceAfterReopen checks exactly-once delivery across a restart:
// a result announced before is not announced again, and one finished but
// not announced is still owed.
func testAnnounceAfterReopen(t *testing.T, reopen func() store.Store) {
	const parent = "ava:cli:restart"
	s := reopen()
	told := createRun(t, s, newRun("S-e0e0e1", parent))
	owed := createRun(t, s, newRun("S-e0e0e2", parent))
	finish(t, s, told.ID, lifecycle.Success)
	finish(t, s, owed.ID, lifecycle.Error)
	ok, err := s.AnnounceResult(ctx(t), told.ID, "", store.Message{Text: "[Task: a] done"})
	must(t, err)
	if !ok {
		t.Fatal("first announcement refused")
	}
	closeStore(t, s)

	s = reopen()
	defer closeStore(t, s)
	ok, err = s.AnnounceResult(ctx(t), told.ID, "", store.Message{Text: "[Task: a] done"})
	must(t, err)
	if ok {
		t.Fatal("a result announced before the restart was announced again")
	}
	pending, err := s.Unannounced(ctx(t))
	must(t, err)
	if len(pending) != 1 || pending[0].ID != owed.ID {
		t.Fatalf("Unannounced after reopen = %+v, want only %s", pending, owed.ShortID)
	}
	ok, err = s.AnnounceResult(ctx(t), owed.ID, "", store.Message{Text: "[Task: b] failed"})
	must(t, err)
	if !ok {
		t.Fatal("the owed result was not announced")
	}
	msgs, err := s.Messages(ctx(t), parent, 0)
	must(t, err)
	var runIDs []string
	for _, m := range msgs {
		runIDs = append(runIDs, m.RunID)
	}
	if diff := cmp.Diff([]string{told.ID, owed.ID}, runIDs); diff != "" {
		t.Fatalf("parent's result messages (-want +got):\n%s", diff)
	}
}

// testInterruptedAfterCrash reopens a store whose runs were active when it
// closed, as after a crash, and ends them as interrupted.
func testInterruptedAfterCrash(t *testing.T, reopen func() store.Store) {
	s := reopen()
	var active []string
	for i, status := range []lifecycle.Status{lifecycle.Running, lifecycle.Pending} {
		r := newRun(shortID(0xc00+i), "ava:cli:crash")
		r.Status, r.Owner = status, "crashed"
		active = append(active, createRun(t, s, r).ID)
	}
	closeStore(t, s)

	s = reopen()
	defer closeStore(t, s)
	runs, err := s.InterruptOwner(ctx(t), "crashed", time.Time{})
	must(t, err)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	slices.Sort(active)
	if diff := cmp.Diff(active, ids); diff != "" {
		t.Fatalf("MarkInterrupted after reopen (-want +got):\n%s", diff)
	}
	owed, err := s.Unannounced(ctx(t))
	must(t, err)
	if len(owed) != 2 {
		t.Fatalf("interrupted runs owed to the parent: %d, want 2", len(owed))
	}
}
