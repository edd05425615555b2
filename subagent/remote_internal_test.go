package subagent

import (
	"slices"
	"sync"
	"testing"
)

// TestRemoteViews: a run has one view however many callers adopt it; of
// the callers that take a view, one gets it; drain ends with none; the
// views whose runs are no longer going are the ended ones.
func TestRemoteViews(t *testing.T) {
	var r remoteRuns
	a, b := &Handle{uuid: "run-a"}, &Handle{uuid: "run-b"}
	r.watch(a)
	if v, added := r.adopt(&Handle{uuid: "run-a"}); added || v != a {
		t.Fatalf("adopt of a watched run: %p added %v, want the watched view", v, added)
	}
	if v, added := r.adopt(b); !added || v != b || r.len() != 2 || r.get("run-b") != b {
		t.Fatalf("adopt of a new run: added %v, %d views", added, r.len())
	}
	if got := r.endedAmong(map[string]bool{"run-a": true}); !slices.Equal(got, []string{"run-b"}) {
		t.Fatalf("ended among: %v", got)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	took := 0
	for range 8 {
		wg.Go(func() {
			if r.take("run-b") {
				mu.Lock()
				took++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if took != 1 || r.get("run-b") != nil {
		t.Fatalf("%d callers took one view", took)
	}
	if views := r.drain(); len(views) != 1 || views[0] != a || r.len() != 0 {
		t.Fatalf("drain: %d views, %d left", len(views), r.len())
	}
}
