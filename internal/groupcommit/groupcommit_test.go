package groupcommit_test

import (
	"sync"
	"testing"

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
		mu.Unlock()
		for _, c := range batch {
			c <- 1
		}
		mu.Lock()
		active--
		seen += len(batch)
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
	if seen != 1000 {
		t.Fatalf("%d items committed, want 1000", seen)
	}
	t.Logf("%d batches for 1000 items", batches)
}
