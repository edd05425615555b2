package question_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/question"
)

func ask(r *question.Registry, id, session string, at time.Time) *question.Open {
	return r.Ask(question.Question{ID: id, Session: session, SubagentID: "S-aaaaaa", Role: "researcher", Text: "which?", AskedAt: at})
}

// TestAnswerOnce: a question is answered once, only in its own session,
// and is no longer listed once answered.
func TestAnswerOnce(t *testing.T) {
	var r question.Registry
	t0 := time.Unix(100, 0)
	q1 := ask(&r, "Q-000001", "ava:cli:a", t0.Add(time.Second))
	ask(&r, "Q-000002", "ava:cli:b", t0)
	if got := r.List(""); len(got) != 2 || got[0].ID != "Q-000002" {
		t.Fatalf("list all: %+v, want oldest first", got)
	}
	if got := r.List("ava:cli:a"); len(got) != 1 || got[0].ID != "Q-000001" {
		t.Fatalf("list a: %+v", got)
	}
	if _, err := r.Answer("Q-000001", "ava:cli:b", "x", question.ByPerson); !errors.Is(err, question.ErrNoQuestion) {
		t.Fatalf("answer from another session: %v", err)
	}
	got, err := r.Answer(question.CanonicalID("q-000001"), "ava:cli:a", "the first", question.ByPerson)
	if err != nil || got.ID != "Q-000001" {
		t.Fatalf("answer: %+v, %v", got, err)
	}
	if _, err := r.Answer("Q-000001", "", "again", question.ByOrchestrator); !errors.Is(err, question.ErrNoQuestion) {
		t.Fatalf("second answer: %v", err)
	}
	a := q1.Wait(context.Background(), time.Hour)
	if diff := cmp.Diff(question.Answer{Text: "the first", By: question.ByPerson}, a); diff != "" {
		t.Fatalf("answer (-want +got):\n%s", diff)
	}
	if got := r.List("ava:cli:a"); len(got) != 0 {
		t.Fatalf("still open after its answer: %+v", got)
	}
}

// TestUnanswered: a question closes unanswered at its timeout or when
// its run ends, and is then gone from the registry.
func TestUnanswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r question.Registry
		q := ask(&r, "Q-000003", "s", time.Now())
		if a := q.Wait(context.Background(), time.Minute); a.By != question.ByTimeout || a.Text != "" {
			t.Fatalf("timeout: %+v", a)
		}
		ctx, cancel := context.WithCancel(context.Background())
		q = ask(&r, "Q-000004", "s", time.Now())
		go func() { time.Sleep(time.Second); cancel() }()
		if a := q.Wait(ctx, time.Hour); a.By != question.ByCancelled {
			t.Fatalf("cancelled: %+v", a)
		}
		if got := r.List(""); len(got) != 0 {
			t.Fatalf("open after closing: %+v", got)
		}
		if _, err := r.Answer("Q-000004", "", "late", question.ByPerson); !errors.Is(err, question.ErrNoQuestion) {
			t.Fatalf("answer after close: %v", err)
		}
	})
}

// TestAnswerTakenBeforeCancel: an answer given before the run ended is
// the one Wait returns, even when the context is already done.
func TestAnswerTakenBeforeCancel(t *testing.T) {
	var r question.Registry
	q := ask(&r, "Q-000005", "s", time.Now())
	if _, err := r.Answer("Q-000005", "s", "yes", question.ByOrchestrator); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a := q.Wait(ctx, time.Hour); a.Text != "yes" || a.By != question.ByOrchestrator {
		t.Fatalf("got %+v, want the answer taken before the cancel", a)
	}
}
