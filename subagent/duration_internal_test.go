package subagent

import (
	"testing"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
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
