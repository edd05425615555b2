package postgres_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// benchFencedAppends appends batches of six events to runs' streams
// from par goroutines, each to a run of its own, under the runs' lease
// when fenced (the run's row read FOR SHARE in the append's batch) or
// without one: the fence's cost per append on PostgreSQL.
func benchFencedAppends(b *testing.B, par int, fenced bool) {
	s := openAt(b, pgtest.URL(b))
	runs := make([]store.Run, 200)
	for i := range runs {
		short := fmt.Sprintf("S-%06x", i)
		runs[i] = store.Run{ID: uuid.NewString(), ShortID: short, SessionKey: store.SubagentSessionPrefix + short,
			Role: "researcher", Task: "bench", Status: "running", Owner: "me"}
		if err := s.CreateRun(b.Context(), runs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetParallelism(par)
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := runs[int(next.Add(1)-1)%len(runs)]
		seq := uint64(1)
		for pb.Next() {
			evs := make([]event.Event, 6)
			for i := range evs {
				evs[i] = event.Event{Seq: seq + uint64(i), Time: time.Now(), Session: r.SessionKey, Agent: r.ShortID,
					Type: event.ToolResult, Content: json.RawMessage(`{"n":1,"text":"a <b> & c"}`)}
				if fenced {
					evs[i].Fence = event.Fence{Run: r.ID, Owner: "me"}
				}
			}
			if err := s.AppendEvents(b.Context(), evs); err != nil {
				b.Error(err)
				return
			}
			seq += 6
		}
	})
}

// BenchmarkAppendEventsFenced is one run's appends at a time, with and
// without its lease checked.
func BenchmarkAppendEventsFenced(b *testing.B) {
	b.Run("unfenced", func(b *testing.B) { benchFencedAppends(b, 1, false) })
	b.Run("fenced", func(b *testing.B) { benchFencedAppends(b, 1, true) })
}

// BenchmarkAppendEventsFencedParallel is many runs' appends at once,
// with and without their leases checked.
func BenchmarkAppendEventsFencedParallel(b *testing.B) {
	b.Run("unfenced", func(b *testing.B) { benchFencedAppends(b, 25, false) })
	b.Run("fenced", func(b *testing.B) { benchFencedAppends(b, 25, true) })
}
