package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

func BenchmarkAppendMessage(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	m := store.Message{SessionKey: "ava:cli:bench", Role: store.RoleUser, Text: "hello",
		Blocks: []byte(`{"role":"user","content":[{"type":"text","text":"hello"}]}`)}
	for b.Loop() {
		if _, err := s.AppendMessage(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMessageParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	b.SetParallelism(50) // many goroutines per core, as with many agents
	b.RunParallel(func(pb *testing.PB) {
		m := store.Message{SessionKey: "ava:cli:" + uuid.NewString(), Role: store.RoleUser, Text: "hello"}
		for pb.Next() {
			if _, err := s.AppendMessage(b.Context(), m); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkMessagesLast50(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	for i := range 2000 {
		m := store.Message{SessionKey: "ava:cli:bench", Role: store.RoleUser, Text: fmt.Sprint(i)}
		if _, err := s.AppendMessage(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := s.Messages(b.Context(), "ava:cli:bench", 50); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchMemory(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	for i := range 5000 {
		m := store.Memory{Content: fmt.Sprintf("note %d about deployment number %d and topic %d", i, i%97, i%13)}
		if _, err := s.WriteMemory(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := s.SearchMemory(b.Context(), "deployment topic 7", 10); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRuns creates n running runs owned by "me".
func benchRuns(b *testing.B, s *Store, n int) []store.Run {
	runs := make([]store.Run, n)
	for i := range runs {
		short := fmt.Sprintf("S-%06x", i)
		runs[i] = store.Run{ID: uuid.NewString(), ShortID: short, SessionKey: store.SubagentSessionPrefix + short,
			Role: "researcher", Task: "bench", Status: "running", Owner: "me"}
		if err := s.CreateRun(b.Context(), runs[i]); err != nil {
			b.Fatal(err)
		}
	}
	return runs
}

// checkpointOf is one step: the model's tool call and its result.
func checkpointOf(r store.Run) store.Checkpoint {
	return store.Checkpoint{Owner: "me", Tokens: 100, CostCents: 0.1, Iterations: 1, Messages: []store.Message{
		{SessionKey: r.SessionKey, Role: store.RoleAssistant, Sender: r.ShortID,
			Blocks: []byte(`{"role":"assistant","content":[{"type":"tool_call","tool_call_id":"c1","tool_name":"read_file","input":{"path":"x"}}]}`)},
		{SessionKey: r.SessionKey, Role: store.RoleUser, Text: "",
			Blocks: []byte(`{"role":"user","content":[{"type":"tool_result","tool_call_id":"c1","content":"the file's text"}]}`)}}}
}

// BenchmarkCheckpointRun is one step's checkpoint (two messages and the
// counters) of one run at a time.
func BenchmarkCheckpointRun(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	r := benchRuns(b, s, 1)[0]
	c := checkpointOf(r)
	for b.Loop() {
		if err := s.CheckpointRun(b.Context(), r.ID, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointRunParallel is checkpoints of 500 runs at once
// (group committed).
func BenchmarkCheckpointRunParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	runs := benchRuns(b, s, 500)
	var next atomic.Int64
	b.SetParallelism(250)
	b.RunParallel(func(pb *testing.PB) {
		r := runs[int(next.Add(1))%len(runs)]
		c := checkpointOf(r)
		for pb.Next() {
			if err := s.CheckpointRun(b.Context(), r.ID, c); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkQuickCheckAtOpen is the integrity check Open runs, on a
// database of AVA_BENCH_DB_MB megabytes (default 64; the figure in
// docs/benchmarks.md is for 1024), built once before the timer starts;
// and the same open of the file as Ava closed it, which skips the check.
func BenchmarkQuickCheckAtOpen(b *testing.B) {
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("AVA_BENCH_DB_MB")); err == nil && v > 0 {
		mb = v
	}
	path := filepath.Join(b.TempDir(), FileName)
	s, err := Open(b.Context(), path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("x", 4000)
	batch := make([]store.Message, 1000)
	for i := range batch {
		batch[i] = store.Message{SessionKey: "k" + strconv.Itoa(i%100), Role: store.RoleUser, Text: text}
	}
	for written := 0; written < mb<<20; written += len(batch) * len(text) {
		if err := s.AppendMessages(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	defer func(d time.Duration) { integrityBound = d }(integrityBound)
	integrityBound = time.Hour
	// checked: the file as another program left it (no marker of a
	// clean close), so Open reads every page; unchanged: as Ava closed it.
	for _, check := range []bool{true, false} {
		b.Run(map[bool]string{true: "checked", false: "unchanged"}[check], func(b *testing.B) {
			for b.Loop() {
				if check {
					os.Remove(path + "-checked")
				}
				s, err := Open(b.Context(), path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkOpenFresh opens a store on a new file (created and migrated)
// and, as BenchmarkOpenExisting, on one already migrated: the store's
// share of a command's start.
func BenchmarkOpenFresh(b *testing.B) {
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		s, err := Open(b.Context(), filepath.Join(dir, fmt.Sprintf("%d.db", i)), Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkOpenExisting: see BenchmarkOpenFresh.
func BenchmarkOpenExisting(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	s, err := Open(b.Context(), path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		s, err := Open(b.Context(), path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// finishOf is a subagent's end as it records it: its result, counters,
// the turn's two messages and the parent's spend.
func finishOf(r store.Run) *store.RunFinish {
	return &store.RunFinish{Result: []byte(`{"subagent_id":"` + r.ShortID + `","status":"success","summary":"done"}`),
		Tokens: 12, CostCents: 0.5, Iterations: 1, Active: 500 * time.Millisecond, EndedAt: time.Now(),
		SpendSession: "ava:test:main", Spend: store.Spend{Model: "m", Usage: event.Usage{Tokens: 12, CostCents: 0.5}},
		Messages: []store.Message{
			{SessionKey: r.SessionKey, Role: store.RoleUser, Sender: store.SenderUser, Text: "Begin the task: bench",
				Blocks: []byte(`{"role":"user","content":[{"type":"text","text":"Begin the task: bench"}]}`)},
			{SessionKey: r.SessionKey, Role: store.RoleAssistant, Sender: r.ShortID, Text: "done",
				Blocks: []byte(`{"role":"assistant","content":[{"type":"text","text":"done"}]}`)}}}
}

// BenchmarkRunEnd is a subagent's end (TransitionRun to success with
// its finish), one run at a time.
func BenchmarkRunEnd(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	runs := benchRuns(b, s, b.N)
	b.ResetTimer()
	defer reportCPU(b)()
	for i := range b.N {
		r := runs[i]
		if err := s.TransitionRun(b.Context(), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, finishOf(r)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunEndParallel is the ends of many runs at once (group
// committed), as under 1,000 subagents at once.
func BenchmarkRunEndParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	runs := benchRuns(b, s, b.N)
	var next atomic.Int64
	b.SetParallelism(100)
	b.ResetTimer()
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := runs[int(next.Add(1)-1)]
			if err := s.TransitionRun(b.Context(), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, finishOf(r)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// reportCPU reports the process's CPU time (user and system) per
// operation from now until the returned func is called: on a shared
// machine a steadier figure than the wall time.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op") }
}

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendEvents stores batches of six events (about what one run
// stores), each batch in a session of its own.
func BenchmarkAppendEvents(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := s.AppendEvents(b.Context(), numberedEvents("ava:subagent:S-"+strconv.Itoa(i), 1, 6)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventsParallel stores batches of six events from many
// goroutines at once, as many runs do.
func BenchmarkAppendEventsParallel(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	b.ReportAllocs()
	b.SetParallelism(50)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			session := "ava:subagent:S-" + strconv.FormatInt(next.Add(1), 10)
			if err := s.AppendEvents(b.Context(), numberedEvents(session, 1, 6)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchFencedAppends appends batches of six events to runs' streams
// from par goroutines, each goroutine to a run of its own, under the
// runs' lease when fenced (event.Fence: the owner's check in the
// append's own transaction) or without one: the fence's cost per append.
func benchFencedAppends(b *testing.B, par int, fenced bool) {
	s := openAt(b, filepath.Join(b.TempDir(), FileName))
	runs := benchRuns(b, s, 1000)
	b.ReportAllocs()
	b.SetParallelism(par)
	var next atomic.Int64
	b.ResetTimer()
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		r := runs[int(next.Add(1)-1)%len(runs)]
		seq := uint64(1)
		for pb.Next() {
			evs := numberedEvents(r.SessionKey, seq, seq+5)
			if fenced {
				for i := range evs {
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

// BenchmarkAppendEventsFencedParallel is many runs' appends at once
// (group committed), with and without their leases checked.
func BenchmarkAppendEventsFencedParallel(b *testing.B) {
	b.Run("unfenced", func(b *testing.B) { benchFencedAppends(b, 50, false) })
	b.Run("fenced", func(b *testing.B) { benchFencedAppends(b, 50, true) })
}

// BenchmarkRunEndEvents is a run's end and its stream's last two events
// (Error, SessionEnd): written as two writes, the end then the events
// (before issue 39), or in the end's own transaction (RunFinish.Events).
func BenchmarkRunEndEvents(b *testing.B) {
	for _, together := range []bool{false, true} {
		b.Run(map[bool]string{false: "separate", true: "together"}[together], func(b *testing.B) {
			s := openAt(b, filepath.Join(b.TempDir(), FileName))
			runs := benchRuns(b, s, b.N)
			b.ResetTimer()
			defer reportCPU(b)()
			for i := range b.N {
				r := runs[i]
				fin := finishOf(r)
				evs := numberedEvents(r.SessionKey, 1, 2)
				if together {
					fin.Events = evs
				}
				if err := s.TransitionRun(b.Context(), r.ID, "me", []lifecycle.Status{lifecycle.Running}, lifecycle.Success, fin); err != nil {
					b.Fatal(err)
				}
				if !together {
					if err := s.AppendEvents(b.Context(), evs); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
