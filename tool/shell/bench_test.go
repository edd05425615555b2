package shell

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkRunBash measures one `run_bash true` call in the sandbox and
// unconfined (AVA_SANDBOX=off), and reports the median and 99th
// percentile per call. Run with a fixed count for stable percentiles:
//
//	go test -run '^$' -bench RunBash -benchtime 300x ./tool/shell/
func BenchmarkRunBash(b *testing.B) {
	for _, mode := range []struct {
		name string
		off  bool
	}{{"sandbox", false}, {"off", true}} {
		b.Run(mode.name, func(b *testing.B) {
			tools := New(Config{Workspace: b.TempDir(), SandboxOff: mode.off})
			tl := tools.RunBash()
			args := []byte(`{"command":"true"}`)
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				res, err := tl.Run(b.Context(), args)
				if err != nil || res.IsError {
					b.Fatalf("%+v %v", res, err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
