package storetest

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

func reportCases() []testCase {
	return []testCase{
		{"ReportOwedOnceAndClaimedOnce", testReportClaimedOnce},
		{"ReportAnsweredByATurn", testReportAnsweredByATurn},
		{"ReportNotOwedForAFollowUp", testReportNotOwedForAFollowUp},
	}
}

// announced finishes a background run of parent and announces its result.
func announced(t *testing.T, s store.Store, short, parent string) {
	t.Helper()
	r := newRun(short, parent)
	r.Status = lifecycle.Running
	r = createRun(t, s, r)
	finish(t, s, r.ID, lifecycle.Success)
	if ok, err := s.AnnounceResult(ctx(t), r.ID, "", store.Message{Text: "[Task: " + short + "] done"}); err != nil || !ok {
		t.Fatalf("announce %s: %v %v", short, ok, err)
	}
}

// Results announced into a session make it owed a report, listed by
// UnreportedSessions once old enough; of 20 processes claiming at once,
// one gets it, and the session is owed nothing more until a new result.
func testReportClaimedOnce(t *testing.T, s store.Store) {
	const parent = "ava:cli:report"
	if _, ok, err := s.ClaimReport(ctx(t), parent); err != nil || ok {
		t.Fatalf("a session with no history: claimed %v, %v", ok, err)
	}
	announced(t, s, "S-a0a0a1", parent)
	announced(t, s, "S-a0a0a2", parent)
	if keys, err := s.UnreportedSessions(ctx(t), time.Now().Add(-time.Hour)); err != nil || len(keys) != 0 {
		t.Fatalf("results an hour old: %v %v, want none (they are newer)", keys, err)
	}
	keys, err := s.UnreportedSessions(ctx(t), time.Now().Add(time.Second))
	must(t, err)
	if !slices.Equal(keys, []string{parent}) {
		t.Fatalf("unreported sessions %v, want [%s]", keys, parent)
	}
	var claims atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, ok, err := s.ClaimReport(ctx(t), parent)
			if err != nil {
				t.Errorf("claim: %v", err)
			}
			if ok {
				claims.Add(1)
			}
		})
	}
	wg.Wait()
	if n := claims.Load(); n != 1 {
		t.Fatalf("claimed %d times, want once", n)
	}
	if keys, err := s.UnreportedSessions(ctx(t), time.Now().Add(time.Second)); err != nil || len(keys) != 0 {
		t.Fatalf("after the claim: %v %v, want none", keys, err)
	}
	announced(t, s, "S-a0a0a3", parent)
	if through, ok, err := s.ClaimReport(ctx(t), parent); err != nil || !ok || through == 0 {
		t.Fatalf("a new result: claimed %v through %d, %v", ok, through, err)
	}
}

// A turn whose messages follow the results answered them: the session
// owes no report, and a claim gets nothing.
func testReportAnsweredByATurn(t *testing.T, s store.Store) {
	const parent = "ava:cli:answered"
	announced(t, s, "S-b0b0b1", parent)
	_, err := s.AppendMessage(ctx(t), store.Message{SessionKey: parent, Role: store.RoleUser, Sender: store.SenderUser, Text: "and?"})
	must(t, err)
	if _, ok, err := s.ClaimReport(ctx(t), parent); err != nil || ok {
		t.Fatalf("answered results: claimed %v, %v", ok, err)
	}
}

// A follow-up's result (a turn the person sent the subagent, after its
// first) is stored in the parent's history but makes it owed nothing.
func testReportNotOwedForAFollowUp(t *testing.T, s store.Store) {
	const parent = "ava:cli:followup"
	r := newRun("S-c0c0c1", parent)
	r.Status = lifecycle.Running
	r = createRun(t, s, r)
	must(t, s.TransitionRun(ctx(t), r.ID, "", lifecycle.Active, lifecycle.Cancelled, &store.RunFinish{Delivered: true}))
	must(t, s.TransitionRun(ctx(t), r.ID, "", []lifecycle.Status{lifecycle.Cancelled}, lifecycle.Running, nil))
	finish(t, s, r.ID, lifecycle.Success)
	if ok, err := s.AnnounceResult(ctx(t), r.ID, "", store.Message{Text: "[Task: x] follow-up answered"}); err != nil || !ok {
		t.Fatalf("announce: %v %v", ok, err)
	}
	if _, ok, err := s.ClaimReport(ctx(t), parent); err != nil || ok {
		t.Fatalf("a follow-up's result: claimed %v, %v", ok, err)
	}
	if keys, err := s.UnreportedSessions(ctx(t), time.Now().Add(time.Second)); err != nil || slices.Contains(keys, parent) {
		t.Fatalf("unreported %v %v", keys, err)
	}
}
