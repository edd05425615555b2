package groupcommit_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/internal/groupcommit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every item is committed exactly once, never by two commits at once,
// and concurrent adds share batches.
func TestEveryItemOnceOneCommitAtATime(t *testing.T) {
	var q groupcommit.Queue[chan int]
	var mu sync.Mutex
	active, batches, seen := 0, 0, 0
	commit := func(batch []chan int) {
		mu.Lock()
		active++
		if active > 1 {
			t.Error("two commits at once")
		}
		batches++
		seen += len(batch) // before the items are settled: the committer may be none of the callers
		mu.Unlock()
		for _, c := range batch {
			c <- 1
		}
		mu.Lock()
		active--
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() {
			done := make(chan int, 1)
			q.Add(done, commit)
			<-done
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if seen != 1000 {
		t.Fatalf("%d items committed, want 1000", seen)
	}
	t.Logf("%d batches for 1000 items", batches)
}

// A leader returns once the batch holding its own item is committed:
// what others queued meanwhile is committed on another goroutine, in
// order, so a steady stream of adds never holds the first caller.
func TestLeaderReturnsAfterItsOwnBatch(t *testing.T) {
	var q groupcommit.Queue[int]
	var mu sync.Mutex
	var order []int
	later := make(chan struct{}) // closed once the leader's Add returned
	queued := make(chan struct{})
	done := make(chan struct{})
	var commit func([]int)
	commit = func(batch []int) {
		mu.Lock()
		order = append(order, batch...)
		mu.Unlock()
		switch batch[len(batch)-1] {
		case 1:
			go func() { q.Add(2, commit); close(queued) }() // not leading: returns at once
			<-queued
		case 2:
			<-later
		case 3:
			close(done)
		}
	}
	returned := make(chan struct{})
	go func() { q.Add(1, commit); close(returned) }()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader is still committing the batch queued after its own")
	}
	close(later)
	q.Add(3, commit)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[1 2 3]" {
		t.Fatalf("committed %v, want [1 2 3]", order)
	}
}

// TestWaitReturnsWhenNoCommitIsUnderWay: Wait waits for the goroutine
// that commits what was queued behind a leader, and returns at once on an
// idle queue.
func TestWaitReturnsWhenNoCommitIsUnderWay(t *testing.T) {
	var q groupcommit.Queue[int]
	q.Wait() // idle: at once
	release, entered := make(chan struct{}), make(chan struct{})
	var committed atomic.Int32
	commit := func(batch []int) {
		if batch[0] == 1 {
			close(entered)
			<-release
		}
		committed.Add(int32(len(batch)))
	}
	go q.Add(1, commit)
	<-entered
	q.Add(2, commit) // queued behind the leader: returns at once
	close(release)
	q.Wait()
	if n := committed.Load(); n != 2 {
		t.Fatalf("Wait returned with %d of 2 items committed", n)
	}
}
