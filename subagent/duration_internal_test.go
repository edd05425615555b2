package subagent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// The completion line (SubagentComplete's durationMs) and the list
// (RunStatus.Elapsed, the API's elapsedMs) show one figure, the run's
// active time, to the millisecond: a float's seconds times 1000, cut,
// read 1001 ms as 1000 for about one duration in a hundred.
func TestCompletionDurationIsTheListsFigure(t *testing.T) {
	for ms := int64(1); ms <= 20_000; ms++ {
		active := time.Duration(ms) * time.Millisecond
		r := Result{SubagentID: "S-0000aa", Status: lifecycle.Success, DurationSeconds: active.Seconds()}
		var c event.SubagentCompleteContent
		if err := completeEvent("researcher", "single", "m", r, agent.Result{}, time.Now(), 0).Decode(&c); err != nil {
			t.Fatal(err)
		}
		if c.DurationMs != active.Milliseconds() || resultCounters(&r).active != active {
			t.Fatalf("active %v: the completion says %d ms, the figures %v", active, c.DurationMs, resultCounters(&r).active)
		}
	}
}

// A stored run's status carries the waits for the person its result
// kept, so that a timeline marks them after the process that ran it is
// gone.
func TestStoredRunKeepsItsWaits(t *testing.T) {
	asked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := Result{SubagentID: "S-0000aa", Status: lifecycle.Success,
		Waits: []Wait{{QuestionID: "Q-00aa11", AskedAt: asked, AnsweredAt: asked.Add(12 * time.Second), By: "person"}}}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	st := statusOfRun(store.Run{ShortID: "S-0000aa", Status: lifecycle.Success, Result: raw}, asked.Add(time.Minute))
	if len(st.Waits) != 1 || st.Waits[0] != r.Waits[0] {
		t.Fatalf("waits %+v", st.Waits)
	}
	if st := statusOfRun(store.Run{ShortID: "S-0000bb", Status: lifecycle.Success, Result: json.RawMessage(`{"summary":"x"}`)}, asked); st.Waits != nil {
		t.Fatalf("a result without waits: %+v", st.Waits)
	}
}
