package audit

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/event"
)

var fixtureDays = []time.Time{
	time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC),
}

// fixture writes five entries a day over three days and returns them
// labelled "<day index>:<name>".
func fixture(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	w := newTestWriter(t, root, Options{})
	var labels []string
	for d, day := range fixtureDays {
		at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
		user := text(at(10, 0), "ava", "please research")
		user.User = "ben"
		user.Session = "ava:cli:1"
		entries := []event.Event{
			user,
			ev(at(10, 1), "S-aaaaaa", event.ToolCall, event.ToolCallContent{Name: "web_search", Args: []byte(`{"query":"pricing"}`)}),
			ev(at(10, 2), "S-bbbbbb", event.Error, event.ErrorContent{Error: "Timeout CONTACTING Otter.ai"}),
			ev(at(10, 3), "ava", event.AssistantMessage, event.TextContent{Text: `He said "quoted"`}),
			ev(day.Add(24*time.Hour-time.Millisecond), "ava", event.CostUpdate, event.CostContent{TotalTokens: 9}),
		}
		writeAll(t, w, entries...)
		for _, n := range []string{"user", "tool", "error", "answer", "cost"} {
			labels = append(labels, string(rune('0'+d))+":"+n)
		}
	}
	return root, labels
}

// label maps an event back to its fixture label.
func label(e event.Event) string {
	d := e.Time.Day() - 18
	name := map[event.Type]string{event.UserMessage: "user", event.ToolCall: "tool", event.Error: "error",
		event.AssistantMessage: "answer", event.CostUpdate: "cost"}[e.Type]
	return string(rune('0'+d)) + ":" + name
}

func pick(labels []string, keep func(string) bool) []string {
	var out []string
	for _, l := range labels {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

func TestQueryFilters(t *testing.T) {
	root, all := fixture(t)
	has := func(names ...string) func(string) bool {
		return func(l string) bool {
			for _, n := range names {
				if strings.HasSuffix(l, ":"+n) {
					return true
				}
			}
			return false
		}
	}
	daily := func(days ...int) []string {
		var out []string
		for _, d := range days {
			out = append(out, fixtureDays[d].Format(dayLayout)+".jsonl")
		}
		return out
	}
	sinceLate2 := fixtureDays[2].Add(-time.Hour)
	for _, tc := range []struct {
		name   string
		q      Query
		want   []string
		opened []string
	}{
		{"everything", Query{}, all, daily(0, 1, 2)},
		{"agent ava", Query{Agent: "ava"}, pick(all, has("user", "answer", "cost")), daily(0, 1, 2)},
		{"subagent reads only its trace", Query{Agent: "S-aaaaaa"}, pick(all, has("tool")), []string{"S-aaaaaa.jsonl"}},
		{"user", Query{User: "ben"}, pick(all, has("user")), daily(0, 1, 2)},
		{"session", Query{Session: "ava:subagent:S-bbbbbb"}, pick(all, has("error")), daily(0, 1, 2)},
		{"since an hour before midnight reads two files", Query{Since: sinceLate2}, append([]string{"1:cost"}, pick(all, func(l string) bool { return l[0] == '2' })...), daily(1, 2)},
		{"until", Query{Until: fixtureDays[0].Add(10*time.Hour + 2*time.Minute)}, []string{"0:user", "0:tool", "0:error"}, daily(0)},
		{"since and until inclusive", Query{Since: fixtureDays[1].Add(10 * time.Hour), Until: fixtureDays[1].Add(10*time.Hour + time.Minute)}, []string{"1:user", "1:tool"}, daily(1)},
		{"type", Query{Types: []event.Type{event.Error}}, pick(all, has("error")), daily(0, 1, 2)},
		{"types", Query{Types: []event.Type{event.Error, event.ToolCall}}, pick(all, has("error", "tool")), daily(0, 1, 2)},
		{"search is case-insensitive", Query{Search: "otter.AI"}, pick(all, has("error")), daily(0, 1, 2)},
		{"search finds escaped quotes", Query{Search: `SAID "quoted"`}, pick(all, has("answer")), daily(0, 1, 2)},
		{"limit reads only the newest file it needs", Query{Limit: 2}, []string{"2:answer", "2:cost"}, daily(2)},
		{"limit across files", Query{Limit: 7}, all[8:], daily(2, 1)},
		{"limit larger than all", Query{Limit: 100}, all, daily(2, 1, 0)},
		{"combined", Query{Agent: "ava", Types: []event.Type{event.AssistantMessage}, Since: fixtureDays[1]}, []string{"1:answer", "2:answer"}, daily(1, 2)},
		{"nothing matches", Query{Agent: "ava", Types: []event.Type{event.Error}}, nil, daily(0, 1, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(root, ReaderOptions{})
			var opened []string
			r.opened = func(p string) { opened = append(opened, filepath.Base(p)) }
			evs, skips, err := r.Query(context.Background(), tc.q)
			if err != nil || len(skips) > 0 {
				t.Fatalf("err %v skips %v", err, skips)
			}
			var got []string
			for _, e := range evs {
				got = append(got, label(e))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.opened, opened); diff != "" {
				t.Errorf("files opened (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueryEntriesKeepRawLines(t *testing.T) {
	root, _ := fixture(t)
	r := NewReader(root, ReaderOptions{})
	entries, _, err := r.QueryEntries(context.Background(), Query{Types: []event.Type{event.ToolCall}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(DailyPath(root, fixtureDays[2]))
	lines := strings.Split(string(data), "\n")
	last := entries[1]
	if string(last.Raw) != lines[1] || last.Line != 2 || last.File != DailyPath(root, fixtureDays[2]) {
		t.Errorf("entry raw %s at %s:%d, want line 2 %s", last.Raw, last.File, last.Line, lines[1])
	}
	if string(entries[0].Raw) == string(entries[1].Raw) {
		t.Error("raw lines share a buffer")
	}
}

func TestQueryHelpersAndErrors(t *testing.T) {
	root, _ := fixture(t)
	ctx := context.Background()
	r := NewReader(root, ReaderOptions{})
	evs, _, err := r.Recent(ctx, "S-bbbbbb", 2)
	if err != nil || len(evs) != 2 || evs[1].Time.Day() != 20 || evs[0].Agent != "S-bbbbbb" {
		t.Errorf("Recent: %v %v", evs, err)
	}
	evs, _, err = r.Search(ctx, "TIMEOUT", Query{Since: fixtureDays[2]})
	if err != nil || len(evs) != 1 {
		t.Errorf("Search: %d events, %v", len(evs), err)
	}
	if _, _, err := r.Query(ctx, Query{Agent: "S-ffffff"}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "S-ffffff has no trace") {
		t.Errorf("unknown subagent: %v", err)
	}
	for _, q := range []Query{
		{Limit: -1},
		{Since: fixtureDays[2], Until: fixtureDays[1]},
		{Types: []event.Type{event.TextDelta}},
	} {
		if _, _, err := r.Query(ctx, q); err == nil {
			t.Errorf("query %+v accepted", q)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	big := t.TempDir()
	w := newTestWriter(t, big, Options{})
	for i := range 5000 {
		w.Deliver(text(day1.Add(time.Duration(i)), "ava", "x"))
	}
	w.Sync()
	if _, _, err := NewReader(big, ReaderOptions{}).Query(cancelled, Query{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled query: %v", err)
	}
	if evs, _, err := NewReader(t.TempDir(), ReaderOptions{}).Query(ctx, Query{}); err != nil || len(evs) != 0 {
		t.Errorf("empty data root: %v %v", evs, err)
	}
}

func TestQueryReportsSkippedLines(t *testing.T) {
	root, _ := fixture(t)
	path := DailyPath(root, fixtureDays[1])
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"timestamp":"2026-11-19T23:59:59.999Z","eventType":"Warn"` + "\n" + `{"torn`)
	f.Close()
	r := NewReader(root, ReaderOptions{})
	evs, skips, err := r.Query(context.Background(), Query{Types: []event.Type{event.Error}, Limit: 10})
	if err != nil || len(evs) != 3 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	// Both bad lines are reported although neither could be an Error.
	if len(skips) != 2 || skips[0].File != path || skips[0].Line != 6 || skips[1].Line != 7 {
		t.Errorf("skips %v, want %s:6 and :7", skips, path)
	}
	_, skips, _ = r.Query(context.Background(), Query{Since: fixtureDays[1], Until: fixtureDays[1].Add(24 * time.Hour)})
	if len(skips) != 2 || skips[1].Line != 7 || !strings.Contains(skips[1].Reason, "torn last line") {
		t.Errorf("skips %v, want lines 6 and 7", skips)
	}
}

func TestResolveSubagent(t *testing.T) {
	root, _ := fixture(t)
	w := newTestWriter(t, root, Options{})
	writeAll(t, w, text(day1, "S-abcdef", "x"))
	r := NewReader(root, ReaderOptions{})
	for in, want := range map[string]string{"S-abcdef": "S-abcdef", "s-ABCDEF": "S-abcdef", "abcd": "S-abcdef",
		"S-b": "S-bbbbbb", "S-ffffff": "S-ffffff"} {
		if got, err := r.ResolveSubagent(in); got != want || err != nil {
			t.Errorf("ResolveSubagent(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{"S-a": "ambiguous", "S-c": "no subagent trace", "S-xyz": "not a subagent ID", "S-abcdef0": "not a subagent ID"} {
		if _, err := r.ResolveSubagent(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ResolveSubagent(%q): %v, want %q", in, err, msg)
		}
	}
}
