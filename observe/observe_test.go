package observe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Every observer sees every notice, in the order it was sent.
func TestEveryObserverSeesEveryNoticeInOrder(t *testing.T) {
	s := observe.New(observe.Options{Logger: quiet()})
	const observers, notices = 3, 500
	got := make([][]string, observers)
	for i := range observers {
		s.Add(observe.Observer{RunStarted: func(_ context.Context, n observe.RunStarted) {
			got[i] = append(got[i], n.SubagentID)
		}})
	}
	for i := range notices {
		s.NotifyRunStarted(observe.RunStarted{Run: observe.Run{SubagentID: fmt.Sprint(i)}})
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range observers {
		if len(got[i]) != notices {
			t.Fatalf("observer %d saw %d notices, want %d", i, len(got[i]), notices)
		}
		for j, id := range got[i] {
			if id != fmt.Sprint(j) {
				t.Fatalf("observer %d: notice %d is %s: order lost", i, j, id)
			}
		}
	}
}

// A blocked observer slows neither the sender nor the other observers.
func TestBlockedObserverDoesNotSlowOthers(t *testing.T) {
	s := observe.New(observe.Options{Logger: quiet()})
	release := make(chan struct{})
	s.Add(observe.Observer{RunEnded: func(ctx context.Context, _ observe.RunEnded) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}})
	fast := make(chan struct{}, 100)
	s.Add(observe.Observer{RunEnded: func(context.Context, observe.RunEnded) { fast <- struct{}{} }})
	start := time.Now()
	for range 100 {
		s.NotifyRunEnded(observe.RunEnded{})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("100 notices took %s with one observer blocked", d)
	}
	for i := range 100 {
		select {
		case <-fast:
		case <-time.After(5 * time.Second):
			t.Fatalf("the other observer got %d of 100 notices while one was blocked", i)
		}
	}
	close(release)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A full queue drops notices for that observer only and counts them.
func TestFullQueueDropsAndCounts(t *testing.T) {
	s := observe.New(observe.Options{QueueSize: 4, Logger: quiet()})
	release := make(chan struct{})
	var mu sync.Mutex
	seen := 0
	s.Add(observe.Observer{TurnEnded: func(context.Context, observe.TurnEnded) {
		<-release
		mu.Lock()
		seen++
		mu.Unlock()
	}})
	for range 10 {
		s.NotifyTurnEnded(observe.TurnEnded{})
	}
	if got := s.Dropped(); got != 6 {
		t.Fatalf("dropped %d, want 6 (queue of 4)", got)
	}
	close(release)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if seen != 4 {
		t.Fatalf("observer saw %d notices, want the 4 queued", seen)
	}
}

// A panicking observer is recovered and goes on with its next notice.
func TestPanicIsRecovered(t *testing.T) {
	s := observe.New(observe.Options{Logger: quiet()})
	var got []string
	s.Add(observe.Observer{QuestionAsked: func(_ context.Context, q observe.QuestionAsked) {
		if q.QuestionID == "Q-1" {
			panic("boom")
		}
		got = append(got, q.QuestionID)
	}})
	s.NotifyQuestionAsked(observe.QuestionAsked{QuestionID: "Q-1"})
	s.NotifyQuestionAsked(observe.QuestionAsked{QuestionID: "Q-2"})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "Q-2" {
		t.Fatalf("after the panic the observer saw %v, want [Q-2]", got)
	}
}

// Close drains the queues; past its context it cancels the observers'
// context, drops the rest and still waits for every goroutine.
func TestCloseDrainsThenGivesUp(t *testing.T) {
	s := observe.New(observe.Options{Logger: quiet()})
	var n int
	s.Add(observe.Observer{ProposalMade: func(ctx context.Context, _ observe.ProposalMade) {
		n++
		<-ctx.Done() // never finishes by itself
	}})
	s.NotifyProposalMade(observe.ProposalMade{})
	s.NotifyProposalMade(observe.ProposalMade{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	if n != 1 {
		t.Fatalf("observer called %d times, want 1 (the second dropped at Close)", n)
	}
	s.NotifyProposalMade(observe.ProposalMade{}) // after Close: nothing
	s.Add(observe.Observer{})()
}

// A removed observer gets what was queued for it, then nothing more.
func TestRemove(t *testing.T) {
	s := observe.New(observe.Options{Logger: quiet()})
	var a, b int
	remove := s.Add(observe.Observer{ProposalDecided: func(context.Context, observe.ProposalDecided) { a++ }})
	s.Add(observe.Observer{ProposalDecided: func(context.Context, observe.ProposalDecided) { b++ }})
	s.NotifyProposalDecided(observe.ProposalDecided{})
	remove()
	remove()
	s.NotifyProposalDecided(observe.ProposalDecided{})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a != 1 || b != 2 {
		t.Fatalf("removed observer saw %d (want 1), the other %d (want 2)", a, b)
	}
}

// A nil Set notifies no one.
func TestNilSet(t *testing.T) {
	var s *observe.Set
	s.NotifyRunStarted(observe.RunStarted{})
	s.NotifyQuestionAnswered(observe.QuestionAnswered{})
	if s.Dropped() != 0 || s.Close(context.Background()) != nil {
		t.Fatal("nil set")
	}
}
