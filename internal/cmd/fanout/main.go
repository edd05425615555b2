// Command fanout runs Ava's side of the fan-out comparison: one fake
// OpenAI-compatible provider on loopback that answers every request
// after a fixed delay (200 ms), and `ava run` delegating to 1 and to 8
// subagents at once (spawn_subagents, parallel), each subagent making one
// model call. It reports, per size, the wall time of the whole command
// against the model floor (three model calls in a row: the orchestrator
// delegates, the subagents answer in parallel, the orchestrator answers)
// and the peak memory of the process tree (the sum of the resident sets
// of ava and its children, sampled every 2 ms), with the peak of its
// anonymous part (heap, stacks: RssAnon) beside it: the rest is pages of
// the binary, which a kernel that keeps files in large folios maps 2 MiB
// at a time (see docs/benchmarks.md).
//
//	CGO_ENABLED=0 go build -o /tmp/ava ./cmd/ava && go run ./internal/cmd/fanout -ava /tmp/ava -reps 5
//
// Run it on a quiet machine; docs/benchmarks.md has its figures.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("ava", "ava", "the ava binary")
	reps := flag.Int("reps", 5, "runs per size")
	delay := flag.Duration("delay", 200*time.Millisecond, "the fake model's delay per reply")
	sizes := flag.String("sizes", "1,8", "subagents per run")
	subModel := flag.String("subagent-model", "", "the subagents' model (another limiter key than the orchestrator's), e.g. openai/fake-sub")
	flag.Parse()
	srv, url := serve(*delay, *subModel)
	defer srv.Close()
	floor := 3 * *delay
	fmt.Printf("fake provider %s, %s a reply; model floor %s\n\n", url, *delay, floor)
	fmt.Println("| subagents | wall median (min–max) | × floor | peak memory of the tree, sampled, median (max) | of it anonymous, median | kernel's peak (ru_maxrss), median (max) |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("size %q", f)
		}
		var walls []time.Duration
		var peaks, anons, maxrss []int64
		for range *reps {
			w, p, a, m, err := runOnce(*bin, url, n)
			if err != nil {
				log.Fatal(err)
			}
			walls, peaks, anons, maxrss = append(walls, w), append(peaks, p), append(anons, a), append(maxrss, m)
		}
		slices.Sort(anons)
		slices.Sort(maxrss)
		slices.Sort(walls)
		slices.Sort(peaks)
		med := walls[len(walls)/2]
		fmt.Printf("| %d | %d ms (%d–%d) | %.2f | %.1f MiB (%.1f) | %.1f MiB | %.1f MiB (%.1f) |\n", n, med.Milliseconds(), walls[0].Milliseconds(),
			walls[len(walls)-1].Milliseconds(), float64(med)/float64(floor), mib(peaks[len(peaks)/2]), mib(peaks[len(peaks)-1]), mib(anons[len(anons)/2]),
			mib(maxrss[len(maxrss)/2]), mib(maxrss[len(maxrss)-1]))
	}
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// runOnce runs `ava run` once on a fresh data root, delegating to n
// subagents, and returns its wall time, the tree's sampled peak RSS and
// peak anonymous RSS, and the kernel's peak RSS of the child
// (getrusage's ru_maxrss, what /usr/bin/time -v reports), in KiB.
func runOnce(bin, url string, n int) (wall time.Duration, peakKB, anonKB, maxRSSKB int64, err error) {
	root, err := os.MkdirTemp("", "ava-fanout-")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer os.RemoveAll(root)
	cmd := exec.Command(bin, "run", "fan out "+strconv.Itoa(n))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + filepath.Join(root, "data"),
		"AVA_WORKSPACE=" + root, "AVA_CONFIRM=never", "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=fake",
		"AVA_MODEL=openai/fake", "AVA_MAX_CONCURRENT_SUBAGENTS=16"}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, 0, err
	}
	var peak, peakAnon atomic.Int64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				kb, anon := treeRSS(cmd.Process.Pid)
				if kb > peak.Load() {
					peak.Store(kb)
				}
				if anon > peakAnon.Load() {
					peakAnon.Store(anon)
				}
			}
		}
	}()
	err = cmd.Wait()
	wall = time.Since(start)
	close(done)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("ava run: %w\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "all done") {
		return 0, 0, 0, 0, fmt.Errorf("ava run did not finish the delegation:\n%s", out.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, 0, 0, fmt.Errorf("no resource usage for ava run on this system")
	}
	return wall, peak.Load(), peakAnon.Load(), ru.Maxrss, nil
}

// treeRSS is the sum of VmRSS and of RssAnon (KiB) of pid and its
// descendants.
func treeRSS(pid int) (total, anon int64) {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The parent is the 4th field, after the parenthesised name.
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], p)
		}
	}
	var walk func(int)
	walk = func(p int) {
		t, a := rss(p)
		total, anon = total+t, anon+a
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return total, anon
}

// rss reads VmRSS and RssAnon (KiB) of pid.
func rss(pid int) (total, anon int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	kb := func(v string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		return n
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			total = kb(v)
		} else if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			anon = kb(v)
		}
	}
	return total, anon
}

// serve starts the fake provider: OpenAI chat completions, streamed.
// The orchestrator's first request (it has the spawn tools and no tool
// result yet) gets one spawn_subagents call with the number of tasks its
// message asks for; a subagent's request gets a short answer; the
// orchestrator's request after the tool result gets "all done".
func serve(delay time.Duration, subModel string) (*http.Server, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(delay)
		orchestrator := slices.ContainsFunc(req.Tools, func(t struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}) bool {
			return t.Function.Name == "spawn_subagents"
		})
		last := req.Messages[len(req.Messages)-1]
		switch {
		case orchestrator && last.Role == "user":
			n := 1
			if s, ok := last.Content.(string); ok {
				fmt.Sscanf(s[strings.LastIndex(s, " ")+1:], "%d", &n)
			}
			tasks := make([]map[string]string, n)
			for i := range tasks {
				tasks[i] = map[string]string{"role": "researcher", "task": fmt.Sprintf("part %d", i)}
				if subModel != "" {
					tasks[i]["model"] = subModel
				}
			}
			args, _ := json.Marshal(map[string]any{"mode": "parallel", "tasks": tasks})
			stream(w, map[string]any{"tool_calls": []map[string]any{{"index": 0, "id": "call_1", "type": "function",
				"function": map[string]string{"name": "spawn_subagents", "arguments": string(args)}}}}, "tool_calls")
		case orchestrator:
			stream(w, map[string]any{"content": "all done"}, "stop")
		default:
			stream(w, map[string]any{"content": "part done"}, "stop")
		}
	})}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String()
}

// stream writes one chat.completion.chunk with delta and the finish
// reason, usage, and [DONE].
func stream(w http.ResponseWriter, delta map[string]any, finish string) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "fake",
		"choices": []map[string]any{{"index": 0, "delta": delta}}})
	chunk(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "fake",
		"choices": []map[string]any{{"index": 0, "delta": map[string]any{}, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}
