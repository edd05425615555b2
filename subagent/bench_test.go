package subagent_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/otlptest"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tracing"
)

// benchManager builds a manager whose models answer from a loopback fake
// OpenAI server after latency; arrivals records when each request came.
func benchManager(b *testing.B, latency time.Duration, limit int, arrivals chan<- time.Time, tr *tracing.Tracer) *subagent.Manager {
	b.Helper()
	fake := llmfake.NewOpenAI(b)
	fake.Respond = func(llmfake.Request) llmfake.Turn {
		if arrivals != nil {
			arrivals <- time.Now()
		}
		return llmfake.Turn{Text: "done", Delay: latency, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}
	}
	return managerFor(b, fake.URL, limit, tr)
}

// benchTracer turns tracing on as a deployment would (tracing.Setup from
// the OTEL_* environment: OTLP over HTTP through the batch processor)
// exporting to a loopback collector; nil when traced is false.
func benchTracer(b *testing.B, traced bool) *tracing.Tracer {
	if !traced {
		return nil
	}
	col := otlptest.New(b)
	b.Setenv(tracing.EnvEndpoint, col.URL)
	p, err := tracing.Setup(context.Background(), tracing.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil || p == nil {
		b.Fatal("tracing setup: ", err)
	}
	b.Cleanup(func() {
		p.Shutdown(context.Background())
		n := len(col.Spans())
		if n == 0 {
			b.Error("no span reached the collector")
		}
		b.Logf("%d spans exported in %d requests", n, col.Requests())
	})
	return p.Tracer()
}

// managerFor builds a manager on a real store and audit log whose models
// are served at url.
func managerFor(b *testing.B, url string, limit int, tr *tracing.Tracer) *subagent.Manager {
	p, err := openai.New(openai.Config{BaseURL: url + "/v1", HTTPClient: benchClient()})
	if err != nil {
		b.Fatal(err)
	}
	cat := llm.NewCatalog(nil)
	cat.Add(p, map[string]string{"sonnet": "m", "haiku": "m", "opus": "m"})
	root := b.TempDir()
	st, err := sqlite.Open(context.Background(), root+"/ava.db", sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	w, err := audit.NewWriter(root, audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	logs, _ := audit.NewSessionLogs(root, audit.SessionOptions{})
	var tools []tool.Tool
	for _, n := range builtinNames {
		tools = append(tools, named(n))
	}
	reg, _ := tool.NewRegistry(tools...)
	m := subagent.NewManager(subagent.Options{Catalog: cat, Tools: reg, Store: st, Hub: event.NewHub(st, w, logs),
		MaxConcurrent: limit, StallAfter: -1, Workspace: root, Tracer: tr})
	if err := m.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close(); w.Close(); st.Close() })
	return m
}

func benchClient() *httpClient { return newHTTPClient() }

// fakeModelProcess starts the test binary as a fake model server in a
// child process and returns it.
func fakeModelProcess(b *testing.B, latency time.Duration, env ...string) fakeModel {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), fakeServerEnv+"="+latency.String()), env...)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal("fake model process: ", err)
	}
	return fakeModel{URL: strings.TrimSpace(line), pid: cmd.Process.Pid}
}

// fakeModel is a fake model server in a child process.
type fakeModel struct {
	URL string
	pid int
}

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ,
// 100 on Linux whatever the kernel's own tick).
const clockTicks = 100

// cpu is the server process's CPU time so far (user and system), and
// whether /proc could tell it.
func (f fakeModel) cpu() (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", f.pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command name, which is in parentheses and
	// may hold spaces: utime and stime are the 12th and 13th of them.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// cpuMeter measures the CPU time a burst costs: Ava's (this process)
// and the fake model server's.
type cpuMeter struct {
	fake        fakeModel
	ava, server time.Duration
	serverOK    bool
}

func startCPU(fake fakeModel) cpuMeter {
	server, ok := fake.cpu()
	return cpuMeter{fake: fake, ava: cpuTime(), server: server, serverOK: ok}
}

// report reports the CPU time per run of a burst of n runs and, when
// the fake server's CPU time could be read, the server's and the ratio
// to one run alone below which this machine's cores could not have done
// the work of both: all of it spread over every core Go may use, nothing
// left waiting (cpu-floor; a loose bound: the last run's own wait for
// its model adds to it).
func (c cpuMeter) report(b *testing.B, n int, one time.Duration) {
	ava := cpuTime() - c.ava
	b.ReportMetric(float64(ava.Microseconds())/1000/float64(n), "cpu-ms/run")
	now, ok := c.fake.cpu()
	if !ok || !c.serverOK {
		return
	}
	server := now - c.server
	b.ReportMetric(float64(server.Microseconds())/1000/float64(n), "fake-cpu-ms/run")
	b.ReportMetric((ava+server).Seconds()/float64(runtime.GOMAXPROCS(0))/one.Seconds(), "cpu-floor")
}

// waitIteration waits until h has started its model call number it.
func waitIteration(h *subagent.Handle, it int) {
	for h.Status().Iteration < it {
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkSpawnToFirstRequest measures the time from Spawn to the fake
// model server receiving the subagent's first request (median reported).
func BenchmarkSpawnToFirstRequest(b *testing.B) { benchSpawnToFirstRequest(b, false) }

// BenchmarkSpawnToFirstRequestTraced is BenchmarkSpawnToFirstRequest with
// tracing on, exporting to a loopback OTLP collector.
func BenchmarkSpawnToFirstRequestTraced(b *testing.B) { benchSpawnToFirstRequest(b, true) }

func benchSpawnToFirstRequest(b *testing.B, traced bool) {
	arrivals := make(chan time.Time, 1)
	m := benchManager(b, 0, 4, arrivals, benchTracer(b, traced))
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		h, err := m.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: "t"}, Parent: parent})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-arrivals).Sub(start))
		if _, err := h.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
}

// BenchmarkSpawnToFirstRequestTracingPaired alternates spawns on two
// managers, one with tracing off and one with it on (exporting to a
// loopback OTLP collector), so that both see the same load on a shared
// machine; it reports each one's median and their ratio.
func BenchmarkSpawnToFirstRequestTracingPaired(b *testing.B) {
	arrivals := make(chan time.Time, 1)
	managers := []*subagent.Manager{benchManager(b, 0, 4, arrivals, nil), benchManager(b, 0, 4, arrivals, benchTracer(b, true))}
	lat := [2][]time.Duration{}
	i := 0
	for b.Loop() {
		k := i % 2
		i++
		start := time.Now()
		h, err := managers[k].Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: "t"}, Parent: parent})
		if err != nil {
			b.Fatal(err)
		}
		lat[k] = append(lat[k], (<-arrivals).Sub(start))
		if _, err := h.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	med := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds())
	}
	if len(lat[1]) == 0 {
		return
	}
	off, on := med(lat[0]), med(lat[1])
	b.ReportMetric(off, "off-median-µs")
	b.ReportMetric(on, "on-median-µs")
	b.ReportMetric(on/off, "on/off")
}

// BenchmarkMemoryPerWaitingSubagent measures memory per subagent while
// 200 subagents wait on a slow model served by another process (so the
// server's memory is not counted).
func BenchmarkMemoryPerWaitingSubagent(b *testing.B) {
	const n = 200
	url := fakeModelProcess(b, 5*time.Second).URL
	for b.Loop() {
		m := managerFor(b, url, n+1, nil)
		// Warm up: one subagent through the whole path, so that lazily
		// built state (SDK, files) is not counted.
		w, _ := m.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: "warm"}, Parent: parent})
		waitIteration(w, 1)
		w.Cancel()
		w.Wait(context.Background())
		runtime.GC()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		hs := make([]*subagent.Handle, n)
		for i := range hs {
			h, err := m.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: fmt.Sprint("t", i)}, Parent: parent})
			if err != nil {
				b.Fatal(err)
			}
			hs[i] = h
		}
		for _, h := range hs {
			waitIteration(h, 1)
		}
		time.Sleep(50 * time.Millisecond) // let the requests reach the wire
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		stack := int64(after.StackInuse) - int64(before.StackInuse)
		b.ReportMetric(float64(heap)/n/1024, "heap-KB/subagent")
		// Stacks include the loopback fake server's goroutines (same
		// process), so this over-counts what a subagent costs.
		b.ReportMetric(float64(heap+stack)/n/1024, "heap+stack-KB/subagent")
		for _, h := range hs {
			h.Cancel()
		}
		for _, h := range hs {
			h.Wait(context.Background())
		}
	}
}

// BenchmarkThousandAtOnce runs 1,000 subagents at once against a model
// with 500 ms latency and reports the wall time against one alone.
func BenchmarkThousandAtOnce(b *testing.B) { benchThousandAtOnce(b, false) }

// BenchmarkThousandAtOnceTraced is BenchmarkThousandAtOnce with tracing
// on, exporting to a loopback OTLP collector.
func BenchmarkThousandAtOnceTraced(b *testing.B) { benchThousandAtOnce(b, true) }

// BenchmarkThousandAtOnceToolStep is BenchmarkThousandAtOnce where each
// run first asks for one tool call (read_file) and answers after its
// result: two model calls of 500 ms and one step that asks for tools, so
// one checkpoint per run (written before the tool runs, the role being
// resumable) and one with its result.
func BenchmarkThousandAtOnceToolStep(b *testing.B) {
	benchThousandAtOnce(b, false, fakeToolStepEnv+"=1")
}

func benchThousandAtOnce(b *testing.B, traced bool, serverEnv ...string) {
	const n = 1000
	fake := fakeModelProcess(b, 500*time.Millisecond, serverEnv...)
	tr := benchTracer(b, traced)
	for b.Loop() {
		m := managerFor(b, fake.URL, n, tr)
		bu := startBurst(m, fake, n)
		for i := range n {
			h, err := m.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: fmt.Sprint("t", i)}, Parent: parent})
			if err != nil {
				b.Fatal(err)
			}
			bu.wg.Go(func() {
				r, _ := h.Wait(context.Background())
				bu.ended(i, r)
			})
		}
		// Less the benchmark's own waiter of each run.
		bu.report(b, n)
	}
}

// BenchmarkThousandAtOnceGroups is BenchmarkThousandAtOnce through the
// product's own path for subagents at once (spawn_subagents): 50
// parallel groups of 20 (MaxGroupSize), spawned one after another with
// SpawnGroup, each member's record written before SpawnGroup returns.
func BenchmarkThousandAtOnceGroups(b *testing.B) {
	const n, size = 1000, subagent.MaxGroupSize
	fake := fakeModelProcess(b, 500*time.Millisecond)
	for b.Loop() {
		m := managerFor(b, fake.URL, n, nil)
		bu := startBurst(m, fake, n)
		for first := 0; first < n; first += size {
			cfgs := make([]subagent.Config, size)
			for i := range cfgs {
				cfgs[i] = subagent.Config{Role: "researcher", Task: fmt.Sprint("t", first+i)}
			}
			g, err := m.SpawnGroup(context.Background(), subagent.GroupRequest{Configs: cfgs, Mode: subagent.ModeParallel, Parent: parent})
			if err != nil {
				b.Fatal(err)
			}
			bu.wg.Go(func() {
				rs, _ := g.Wait(context.Background())
				for i, r := range rs {
					bu.ended(first+i, r)
				}
			})
		}
		// Less the benchmark's own waiter of each group.
		bu.report(b, n/size)
	}
}

// burst is a burst of runs started at once on a manager, measured
// against one run alone on it.
type burst struct {
	one       time.Duration
	start     time.Time
	created   uint64
	cpu       cpuMeter
	wg        sync.WaitGroup
	results   []lifecycle.Status
	durations []float64
	ends      []time.Duration
}

// startBurst runs one subagent alone on m, then starts measuring a
// burst of n runs.
func startBurst(m *subagent.Manager, fake fakeModel, n int) *burst {
	one := oneAlone(m)
	return &burst{one: one, created: goroutinesCreated(), cpu: startCPU(fake), start: time.Now(),
		results: make([]lifecycle.Status, n), durations: make([]float64, n), ends: make([]time.Duration, n)}
}

// ended records how run i ended, and when.
func (bu *burst) ended(i int, r subagent.Result) {
	bu.results[i], bu.durations[i], bu.ends[i] = r.Status, r.DurationSeconds, time.Since(bu.start)
}

// report waits for the burst's runs, once all are spawned, and reports
// it; waiters is how many goroutines the benchmark started to wait for
// them.
func (bu *burst) report(b *testing.B, waiters int) {
	spawned := time.Since(bu.start)
	bu.wg.Wait()
	all := time.Since(bu.start)
	n := len(bu.results)
	b.ReportMetric(float64(goroutinesCreated()-bu.created-uint64(waiters))/float64(n), "goroutines/run")
	bu.cpu.report(b, n, bu.one)
	reportThousand(b, bu.one, spawned, all, bu.results, bu.durations, bu.ends)
}

// oneAlone is the wall time of one subagent spawned alone on m and
// waited for: what a burst is measured against.
func oneAlone(m *subagent.Manager) time.Duration {
	start := time.Now()
	h, _ := m.Spawn(context.Background(), subagent.Request{Config: subagent.Config{Role: "researcher", Task: "alone"}, Parent: parent})
	h.Wait(context.Background())
	return time.Since(start)
}

// reportThousand reports a burst of runs started at once: the spawn
// loop, the wall time against one run alone, and each run's outcome,
// duration and end.
func reportThousand(b *testing.B, one, spawned, all time.Duration, results []lifecycle.Status, durations []float64, ends []time.Duration) {
	n := len(results)
	b.ReportMetric(spawned.Seconds(), "spawn-loop-s")
	ok := 0
	for _, s := range results {
		if s == lifecycle.Success {
			ok++
		}
	}
	b.ReportMetric(one.Seconds(), "one-s")
	b.ReportMetric(all.Seconds(), "thousand-s")
	b.ReportMetric(all.Seconds()/one.Seconds(), "ratio")
	b.ReportMetric(float64(ok), "succeeded")
	sort.Float64s(durations)
	b.ReportMetric(durations[n/2], "run-median-s")
	b.ReportMetric(durations[n-1], "run-max-s")
	var lastEnd time.Duration
	for _, e := range ends {
		lastEnd = max(lastEnd, e)
	}
	b.ReportMetric(lastEnd.Seconds()-all.Seconds(), "wait-lag-s")
	if ok != n {
		b.Fatalf("%d of %d succeeded", ok, n)
	}
}

// goroutinesCreated is how many goroutines the process has created.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// cpuTime is this process's CPU time so far (user and system): what Ava
// spends, the fake model server being another process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
