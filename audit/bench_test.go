package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/redact"
)

// benchEvent is a typical audit entry (about 300 bytes).
func benchEvent(t time.Time, agent string, typ event.Type) event.Event {
	e := ev(t, agent, event.ToolCall, event.ToolCallContent{ID: "toolu_01ABCDEF", Name: "web_search",
		Args: []byte(`{"query":"podcast transcription pricing 2026 otter.ai descript rev"}`)})
	if typ == event.Error {
		e = ev(t, agent, event.Error, event.ErrorContent{Error: "fetch https://otter.ai/pricing: timeout after 30s"})
	}
	e.User, e.Seq = "ben", 42
	e.Meta = event.Meta{InputTokens: 1200, OutputTokens: 80, CostCents: 0.31, ModelID: "anthropic/claude-haiku-4-5"}
	return e
}

func reportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "entries/s")
}

func BenchmarkAppend(b *testing.B) {
	e := benchEvent(day1, "S-7f3a2b", event.ToolCall) // daily log and trace
	b.Run("serial", func(b *testing.B) {
		w := newTestWriter(b, b.TempDir(), Options{SyncInterval: DefaultSyncInterval})
		for b.Loop() {
			if err := w.Deliver(e); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	// serial-redacted is serial with the writer masking every line, as
	// a writer not fed by Ava's hub (which masks events itself) would.
	b.Run("serial-redacted", func(b *testing.B) {
		r := redact.New(redact.Options{Secrets: []string{"sk-ant-api03-0123456789abcdefghij"},
			Environ: []string{"MY_SERVICE_PASS=opensesame99"}})
		w := newTestWriter(b, b.TempDir(), Options{SyncInterval: DefaultSyncInterval, Redactor: r})
		for b.Loop() {
			if err := w.Deliver(e); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
	b.Run("parallel", func(b *testing.B) {
		w := newTestWriter(b, b.TempDir(), Options{SyncInterval: DefaultSyncInterval})
		b.SetParallelism(50) // many agents at once
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := w.Deliver(e); err != nil {
					b.Error(err)
					return
				}
			}
		})
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
		reportRate(b, b.N)
	})
}

// Benchmark data set: one million entries from 2026-01-01 00:00 to
// 2026-01-06 00:30 UTC (six daily files, one entry every 434ms), 1%
// errors; S-b19b19 has a 100,000-entry trace, S-5a11ed a 1,000-entry one.
const (
	benchEntries = 1_000_000
	benchBig     = "S-b19b19"
	benchSmall   = "S-5a11ed"
)

var benchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchRoot returns the data set's root, generating it once into a cached
// directory under os.TempDir().
func benchRoot(b *testing.B) string {
	root := filepath.Join(os.TempDir(), "ava-audit-bench-v2")
	marker := filepath.Join(root, "complete")
	if _, err := os.Stat(marker); err == nil {
		return root
	}
	b.Logf("generating %d entries in %s (once)", benchEntries, root)
	os.RemoveAll(root)
	w, err := NewWriter(root, Options{QueueSize: 1 << 14})
	if err != nil {
		b.Fatal(err)
	}
	step := (5*24*time.Hour + 30*time.Minute) / benchEntries
	for i := range benchEntries {
		agent := "ava"
		switch {
		case i%10 == 1:
			agent = benchBig
		case i%1000 == 7:
			agent = benchSmall
		case i%10 == 3:
			agent = fmt.Sprintf("S-%06x", i%97)
		}
		typ := event.ToolCall
		if i%100 == 50 {
			typ = event.Error
		}
		if err := w.Deliver(benchEvent(benchStart.Add(time.Duration(i)*step), agent, typ)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return root
}

// BenchmarkQueryErrorsSince1h is `ava logs --type Error --since 1h` at
// 2026-01-06 00:30 UTC, the end of the data: it must open only the two
// daily files that can hold the last hour.
func BenchmarkQueryErrorsSince1h(b *testing.B) {
	root := benchRoot(b)
	now := time.Date(2026, 1, 6, 0, 30, 0, 0, time.UTC)
	since, err := ParseTime("1h", now)
	if err != nil {
		b.Fatal(err)
	}
	r := NewReader(root, ReaderOptions{})
	var opened []string
	r.opened = func(p string) { opened = append(opened, filepath.Base(p)) }
	q := Query{Types: []event.Type{event.Error}, Since: since}
	var n int
	for b.Loop() {
		opened = opened[:0]
		evs, skips, err := r.Query(context.Background(), q)
		if err != nil || len(skips) > 0 {
			b.Fatal(err, skips)
		}
		n = len(evs)
	}
	if len(opened) != 2 || opened[0] != "2026-01-05.jsonl" || opened[1] != "2026-01-06.jsonl" {
		b.Fatalf("opened %v, want the two daily files of the last hour", opened)
	}
	if n < 75 || n > 90 { // 3600s / 434ms / 100
		b.Fatalf("%d errors in the last hour, want about 83", n)
	}
	b.ReportMetric(float64(len(opened)), "files/op")
	b.ReportMetric(float64(n), "matches/op")
}

// BenchmarkQuerySubagentTrace shows that `ava logs S-xxxxxx` costs what
// that trace's size costs: ns/entry stays flat from 1,000 to 100,000
// entries, and only the trace file is opened.
func BenchmarkQuerySubagentTrace(b *testing.B) {
	root := benchRoot(b)
	for _, id := range []string{benchSmall, benchBig} {
		b.Run(id, func(b *testing.B) {
			r := NewReader(root, ReaderOptions{})
			var opened []string
			r.opened = func(p string) { opened = append(opened, filepath.Base(p)) }
			fi, err := os.Stat(TracePath(root, id))
			if err != nil {
				b.Fatal(err)
			}
			var n int
			for b.Loop() {
				opened = opened[:0]
				evs, _, err := r.Query(context.Background(), Query{Agent: id})
				if err != nil {
					b.Fatal(err)
				}
				n = len(evs)
			}
			if len(opened) != 1 || opened[0] != id+".jsonl" {
				b.Fatalf("opened %v, want only the trace", opened)
			}
			b.ReportMetric(float64(n), "entries/op")
			b.ReportMetric(float64(fi.Size())/1e6, "MB-trace")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}
