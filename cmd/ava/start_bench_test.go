package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// BenchmarkStartToFirstRequest starts `ava run hello` (the built binary)
// once per iteration against an OpenAI-compatible server on loopback and
// times, from the start of the process, the arrival of its first model
// request; it reports the median and 90th percentile on a fresh data root
// (a new one each iteration) and on an existing one:
//
//	go test -run '^$' -bench StartToFirstRequest -benchtime=20x ./cmd/ava/
func BenchmarkStartToFirstRequest(b *testing.B) {
	var mu sync.Mutex
	var first time.Time
	srv := llmfake.NewOpenAI(b)
	srv.Respond = func(llmfake.Request) llmfake.Turn {
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		mu.Unlock()
		return llmfake.Turn{Text: "hi", Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}
	}
	root := b.TempDir()
	run := func(data string) time.Duration {
		mu.Lock()
		first = time.Time{}
		mu.Unlock()
		cmd := exec.Command(avaBin, "run", "hello")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + root,
			"AVA_CONFIRM=never", "OPENAI_BASE_URL=" + srv.URL + "/v1", "AVA_MODEL=openai/m"}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("ava run: %v\n%s", err, out)
		}
		mu.Lock()
		defer mu.Unlock()
		if first.IsZero() {
			b.Fatal("no model request")
		}
		return first.Sub(start)
	}
	existing := filepath.Join(root, "existing")
	run(existing)
	var fresh, again []time.Duration
	i := 0
	for b.Loop() {
		i++
		fresh = append(fresh, run(filepath.Join(root, "fresh", string(rune('a'+i%26))+time.Now().Format("150405.000000"))))
		again = append(again, run(existing))
	}
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, name+"-median-ms")
		b.ReportMetric(float64(d[min(len(d)-1, len(d)*9/10)].Microseconds())/1000, name+"-p90-ms")
	}
	report("fresh", fresh)
	report("existing", again)
}
