package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
)

// TestFanoutFigures measures event delivery from one subagent session to
// many SSE subscribers over real HTTP on loopback: each event carries its
// publishing time, each subscriber notes when it read it. Run with
// AVA_BENCH=1 (docs/benchmarks.md); AVA_BENCH_SUBS, AVA_BENCH_RATE (events
// per second) and AVA_BENCH_EVENTS change the load.
func TestFanoutFigures(t *testing.T) {
	if os.Getenv("AVA_BENCH") == "" {
		t.Skip("set AVA_BENCH=1 to measure")
	}
	subs, rate, total := envInt("AVA_BENCH_SUBS", 1000), envInt("AVA_BENCH_RATE", 10000), envInt("AVA_BENCH_EVENTS", 10000)
	e := newEnv(t, envOptions{})
	sa := e.spawnBlocking("")
	base, err := e.in.Store.LastSeq(ctx(t), sa.SessionKey)
	must(t, err)
	lat := make([][]time.Duration, subs)
	var ready, wg sync.WaitGroup
	ready.Add(subs)
	for i := range subs {
		req, _ := http.NewRequestWithContext(ctx(t), "GET", e.ts.URL+"/api/chat/stream?sessionKey="+sa.SessionKey+"&after="+strconv.FormatUint(base, 10), nil)
		resp, err := http.DefaultClient.Do(e.authorize(req))
		must(t, err)
		defer resp.Body.Close()
		wg.Go(func() {
			ready.Done()
			lat[i] = readLatencies(resp.Body, total)
		})
	}
	ready.Wait()
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for n := range total {
		if d := time.Until(start.Add(time.Duration(n) * interval)); d > 0 {
			time.Sleep(d) // pacing the publisher is the load, not a wait for a result
		}
		ev := event.New(event.ToolCall, event.ToolCallContent{ID: strconv.FormatInt(time.Now().UnixNano(), 10), Name: "bench"})
		ev.Session, ev.Agent = sa.SessionKey, sa.ID
		if _, err := e.in.Hub.Publish(ev); err != nil {
			t.Fatal(err)
		}
	}
	pubElapsed := time.Since(start)
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for i, l := range lat {
		if len(l) != total {
			t.Fatalf("subscriber %d got %d of %d events", i, len(l), total)
		}
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[int(float64(len(all)-1)*p)] }
	t.Logf("subscribers %d, events %d, target rate %d/s: published at %.0f/s, delivered %.0f events/s to all (%.0f deliveries/s); latency p50 %v p99 %v max %v",
		subs, total, rate, float64(total)/pubElapsed.Seconds(), float64(total)/elapsed.Seconds(), float64(len(all))/elapsed.Seconds(),
		pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), all[len(all)-1].Round(time.Microsecond))
	_, err = e.c.Stop(ctx(t), sa.SessionKey)
	must(t, err)
}

// readLatencies reads n bench events from an SSE body and returns each
// one's delivery latency.
func readLatencies(body interface{ Read([]byte) (int, error) }, n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	r := bufio.NewReaderSize(body, 256<<10)
	marker := []byte(`"content":{"id":"`)
	for len(out) < n {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return out
		}
		i := bytes.Index(line, marker)
		if i < 0 || !bytes.Contains(line, []byte(`"name":"bench"`)) {
			continue
		}
		rest := line[i+len(marker):]
		j := bytes.IndexByte(rest, '"')
		ns, err := strconv.ParseInt(string(rest[:j]), 10, 64)
		if err != nil {
			panic(fmt.Sprint("bad bench event ", string(line)))
		}
		out = append(out, time.Since(time.Unix(0, ns)))
	}
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
