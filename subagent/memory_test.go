package subagent_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// spawnAndFinish runs n subagents to the end and returns their IDs, so
// that no handle stays referenced.
func spawnAndFinish(t testing.TB, m *subagent.Manager, n int) []string {
	ids := make([]string, 0, n)
	ctx := context.Background()
	for i := range n {
		hd, err := m.Spawn(ctx, subagent.Request{Config: subagent.Config{Role: "researcher", Task: fmt.Sprint("t", i)}, Parent: parent})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hd.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, hd.ID())
	}
	return ids
}

// waitCollected collects garbage until the manager's weak index of
// finished handles is empty.
func waitCollected(t testing.TB, m *subagent.Manager) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		active, idle := subagent.HeldHandles(m)
		if active == 0 && idle == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("manager still holds %d active and %d finished handles", active, idle)
		}
		time.Sleep(time.Millisecond) // let the runtime's cleanups run
	}
}

// Finished handles leave memory; status, listing, Get and follow-ups
// still work for them, restored from the store.
func TestFinishedHandlesLeaveMemory(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: first answer\n  - text: \"second answer after: {{input}}\"\n", nil)
	ids := spawnAndFinish(t, h.m, 12)
	if active, _ := subagent.HeldHandles(h.m); active != 0 {
		t.Fatalf("%d finished handles held strongly", active)
	}
	waitCollected(t, h.m)

	ctx := tool.WithCaller(context.Background(), parent)
	tools := h.m.Tools()
	res, _ := tools[2].Run(ctx, mustJSON(subagent.IDArgs{SubagentID: ids[3]}))
	if res.IsError || !strings.Contains(res.Output, `"status": "success"`) || !strings.Contains(res.Output, "first answer") {
		t.Fatalf("subagent_status of a finished run:\n%s", res.Output)
	}
	res, _ = tools[3].Run(ctx, mustJSON(subagent.ListArgs{All: true}))
	if n := strings.Count(res.Output, " success "); n != len(ids) {
		t.Fatalf("list_subagents all=true shows %d of %d finished runs:\n%s", n, len(ids), res.Output)
	}
	got, err := h.m.Get(ids[5][:6])
	if err != nil || got.ID() != ids[5] {
		t.Fatalf("Get by prefix: %v %v", got, err)
	}
	if st := got.Status(); st.Status != lifecycle.Success || st.Tokens == 0 || st.Iteration != 1 {
		t.Fatalf("restored status %+v", st)
	}
	if again, _ := h.m.Get(ids[5]); again != got {
		t.Fatal("a held handle was restored twice")
	}
	hd, err := h.m.Send(context.Background(), ids[5], "and now?", false)
	if err != nil {
		t.Fatal(err)
	}
	if hd != got {
		t.Fatal("Send did not resume the held handle")
	}
	r := wait(t, hd)
	if r.Status != lifecycle.Success || !strings.Contains(string(r.Output), "second answer") {
		t.Fatalf("follow-up of a restored run: %+v %s", r, r.Output)
	}
	last := h.model.requests()[len(h.model.requests())-1]
	if len(last.Messages) != 3 || last.Messages[2].TextContent() != "and now?" {
		t.Fatalf("resumed without its conversation: %+v", last.Messages)
	}
	hd, got = nil, nil
	waitCollected(t, h.m)
}

// BenchmarkHeapAfterFinished reports the heap in use (after GC) once n
// subagents have finished, against the heap before any ran: with
// finished handles and journals leaving memory it does not grow with n.
// Run with -benchtime 1x.
func BenchmarkHeapAfterFinished(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				h := newHarness(b, "turns:\n  - text: done\n", func(o *subagent.Options) {
					o.MaxConcurrent = 8
					o.Catalog = unrecordedCatalog(b) // the harness's recorder keeps every request
				})
				spawnAndFinish(b, h.m, 10) // warm up lazily built state
				waitCollected(b, h.m)
				before := heapInuse()
				start := time.Now()
				spawnAndFinish(b, h.m, n)
				elapsed := time.Since(start)
				waitCollected(b, h.m)
				after := heapInuse()
				b.ReportMetric(float64(before)/(1<<20), "heap-before-MB")
				b.ReportMetric(float64(after)/(1<<20), "heap-after-MB")
				b.ReportMetric((float64(after)-float64(before))/float64(n), "B/finished-subagent")
				b.ReportMetric(elapsed.Seconds()/float64(n)*1000, "ms/subagent")
			}
		})
	}
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// unrecordedCatalog serves a scripted "done" as every alias, keeping
// nothing per call.
func unrecordedCatalog(b *testing.B) *llm.Catalog {
	s, err := scripted.Parse("test", []byte("turns:\n  - text: done\n"))
	if err != nil {
		b.Fatal(err)
	}
	cat := llm.NewCatalog(llm.Prices{"t": {Input: 10_000, Output: 10_000}})
	cat.Add(scripted.NewWithScript(s), map[string]string{"haiku": "t", "sonnet": "t", "opus": "t"})
	return cat
}
