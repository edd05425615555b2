package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
)

// The stream load harness (issue 29 item 5): the daemon's server and the
// publisher run in this test process, the subscribers in another (this
// test binary run again as TestStreamSubscriberProcess), so the figures
// are the server's own. Run it with
//
//	AVA_BENCH=1 go test -run TestStreamFigures -v ./gateway/
//
// AVA_BENCH_SUBS (1,000), AVA_BENCH_RATE (200 events/s) and
// AVA_BENCH_EVENTS (3,000) change the load; add -cpuprofile to profile
// the server side (the subscriber process is not profiled).

// Environment of the subscriber process.
const (
	loadURLEnv    = "AVA_STREAMLOAD_URL"
	loadTokenEnv  = "AVA_STREAMLOAD_TOKEN"
	loadSubsEnv   = "AVA_STREAMLOAD_SUBS"
	loadEventsEnv = "AVA_STREAMLOAD_EVENTS"
)

// loadReport is what the subscriber process prints when every
// subscriber has read every event.
type loadReport struct {
	Subscribers int           `json:"subscribers"`
	Events      int           `json:"events"`
	P50         time.Duration `json:"p50"`
	P99         time.Duration `json:"p99"`
	Max         time.Duration `json:"max"`
	LastRead    time.Time     `json:"lastRead"`
	CPU         time.Duration `json:"cpu"` // the subscriber process's, from ready to the last read
	Err         string        `json:"err,omitempty"`
}

// TestStreamFigures measures live delivery of one session's kept events,
// published at a paced rate, to many SSE subscribers in another process
// over real loopback HTTP (docs/benchmarks.md).
func TestStreamFigures(t *testing.T) {
	if os.Getenv("AVA_BENCH") == "" {
		t.Skip("set AVA_BENCH=1 to measure")
	}
	subs, rate, total := envInt("AVA_BENCH_SUBS", 1000), envInt("AVA_BENCH_RATE", 200), envInt("AVA_BENCH_EVENTS", 3000)
	e := newEnv(t, envOptions{})
	sa := e.spawnBlocking("")
	base, err := e.in.Store.LastSeq(ctx(t), sa.SessionKey)
	must(t, err)
	url := e.ts.URL + "/api/chat/stream?sessionKey=" + sa.SessionKey + "&after=" + strconv.FormatUint(base, 10)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamSubscriberProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadURLEnv+"="+url, loadTokenEnv+"="+e.token,
		loadSubsEnv+"="+strconv.Itoa(subs), loadEventsEnv+"="+strconv.Itoa(total))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	if !scanTo(lines, []byte("READY")) {
		t.Fatal("the subscriber process ended before its subscribers were connected")
	}
	cpu0, writes0, start := processCPU(), processWrites(), time.Now()
	publishPaced(t, e, sa.SessionKey, sa.ID, rate, total)
	pubElapsed, cpu1, writes1 := time.Since(start), processCPU(), processWrites()
	var rep loadReport
	if !scanTo(lines, []byte("REPORT ")) {
		t.Fatal("the subscriber process ended without a report")
	}
	must(t, json.Unmarshal(bytes.TrimPrefix(lines.Bytes(), []byte("REPORT ")), &rep))
	if rep.Err != "" {
		t.Fatal(rep.Err)
	}
	delivered := rep.LastRead.Sub(start)
	t.Logf("subscribers %d (another process), events %d, target %d/s: published %.0f/s, delivered %.0f/s per subscriber (%.0f deliveries/s); "+
		"latency p50 %v p99 %v max %v; server CPU %v (%.0f%% of one core, %.2f µs a delivery) and %.2f write calls a delivery while publishing, subscriber process CPU %v",
		subs, total, rate, float64(total)/pubElapsed.Seconds(), float64(total)/delivered.Seconds(), float64(total*subs)/delivered.Seconds(),
		rep.P50.Round(time.Microsecond), rep.P99.Round(time.Microsecond), rep.Max.Round(time.Microsecond),
		(cpu1 - cpu0).Round(time.Millisecond), 100*(cpu1-cpu0).Seconds()/pubElapsed.Seconds(), float64((cpu1-cpu0).Microseconds())/float64(total*subs),
		float64(writes1-writes0)/float64(total*subs), rep.CPU.Round(time.Millisecond))
	_, err = e.c.Stop(ctx(t), sa.SessionKey)
	must(t, err)
}

// scanTo reads lines until one starts with prefix.
func scanTo(s *bufio.Scanner, prefix []byte) bool {
	for s.Scan() {
		if bytes.HasPrefix(s.Bytes(), prefix) {
			return true
		}
	}
	return false
}

// publishPaced publishes total kept bench events to session at rate per
// second, each carrying its publishing time in its tool call ID.
func publishPaced(t *testing.T, e *env, session, agent string, rate, total int) {
	t.Helper()
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for n := range total {
		if d := time.Until(start.Add(time.Duration(n) * interval)); d > 0 {
			time.Sleep(d) // pacing the publisher is the load, not a wait for a result
		}
		ev := event.New(event.ToolCall, event.ToolCallContent{ID: strconv.FormatInt(time.Now().UnixNano(), 10), Name: "bench"})
		ev.Session, ev.Agent = session, agent
		if _, err := e.in.Hub.Publish(ev); err != nil {
			t.Fatal(err)
		}
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processWrites is how many write system calls this process has made
// (Linux; 0 elsewhere).
func processWrites() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// TestStreamSubscriberProcess is the subscriber side of TestStreamFigures
// when run by it: it opens the streams, prints READY, reads every event on
// each, checking order, and prints a REPORT line.
func TestStreamSubscriberProcess(t *testing.T) {
	url := os.Getenv(loadURLEnv)
	if url == "" {
		t.Skip("run by TestStreamFigures")
	}
	subs, total := envInt(loadSubsEnv, 1000), envInt(loadEventsEnv, 1000)
	rep := loadReport{Subscribers: subs, Events: total}
	if err := subscribeAll(url, os.Getenv(loadTokenEnv), subs, total, &rep); err != nil {
		rep.Err = err.Error()
	}
	b, err := json.Marshal(rep)
	must(t, err)
	fmt.Printf("REPORT %s\n", b)
}

// subscribeAll opens subs streams on url, announces READY, and reads
// total bench events on each into rep.
func subscribeAll(url, token string, subs, total int, rep *loadReport) error {
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	bodies := make([]io.ReadCloser, 0, subs)
	defer func() {
		for _, b := range bodies {
			b.Close()
		}
	}()
	for range subs {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return fmt.Errorf("subscriber %d: %w", len(bodies), err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("subscriber %d: %s", len(bodies), resp.Status)
		}
		bodies = append(bodies, resp.Body)
	}
	lat := make([][]time.Duration, subs)
	last := make([]time.Time, subs)
	errs := make([]error, subs)
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() { lat[i], last[i], errs[i] = readBench(b, total) })
	}
	cpu0 := processCPU()
	fmt.Println("READY")
	wg.Wait()
	rep.CPU = processCPU() - cpu0
	var all []time.Duration
	for i := range subs {
		if errs[i] != nil {
			return fmt.Errorf("subscriber %d: %w", i, errs[i])
		}
		all = append(all, lat[i]...)
		if last[i].After(rep.LastRead) {
			rep.LastRead = last[i]
		}
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[int(float64(len(all)-1)*p)] }
	rep.P50, rep.P99, rep.Max = pct(0.5), pct(0.99), all[len(all)-1]
	return nil
}

// readBench reads n bench events from an SSE body, checking that the
// kept numbers run on without a gap or a repeat, and returns each one's
// delivery latency and when the last was read.
func readBench(body io.Reader, n int) ([]time.Duration, time.Time, error) {
	out := make([]time.Duration, 0, n)
	r := bufio.NewReaderSize(body, 64<<10)
	marker := []byte(`"content":{"id":"`)
	var prev uint64
	for len(out) < n {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return out, time.Time{}, fmt.Errorf("after %d of %d events: %w", len(out), n, err)
		}
		if id, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			seq, err := strconv.ParseUint(string(bytes.TrimSpace(id)), 10, 64)
			if err != nil || (prev != 0 && seq != prev+1) {
				return out, time.Time{}, fmt.Errorf("event id %q after %d", id, prev)
			}
			prev = seq
			continue
		}
		i := bytes.Index(line, marker)
		if i < 0 || !bytes.Contains(line, []byte(`"name":"bench"`)) {
			continue
		}
		rest := line[i+len(marker):]
		ns, err := strconv.ParseInt(string(rest[:bytes.IndexByte(rest, '"')]), 10, 64)
		if err != nil {
			return out, time.Time{}, fmt.Errorf("bad bench event %s", line)
		}
		out = append(out, time.Since(time.Unix(0, ns)))
	}
	return out, time.Now(), nil
}
