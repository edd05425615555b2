package audit

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
)

// follower runs Follow in a goroutine owned by the test.
type follower struct {
	got    chan string
	cancel context.CancelFunc
	done   chan error
}

func startFollow(t *testing.T, r *Reader, q Query) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{got: make(chan string, 100), cancel: cancel, done: make(chan error, 1)}
	go func() {
		f.done <- r.Follow(ctx, q, func(e event.Event) error {
			var c event.TextContent
			e.Decode(&c)
			f.got <- e.Agent + ":" + c.Text
			return nil
		})
	}()
	t.Cleanup(func() { f.stop(t) })
	return f
}

func (f *follower) stop(t *testing.T) {
	f.cancel()
	if err, ok := <-f.done; ok && err != nil {
		t.Errorf("Follow: %v", err)
	}
	close(f.done)
}

// expect waits for the next entries, in order.
func (f *follower) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-f.got:
			if got != w {
				t.Fatalf("followed %q, want %q", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no entry %q within 5s", w)
		}
	}
}

// expectNothing checks that nothing more arrives for a while.
func (f *follower) expectNothing(t *testing.T) {
	t.Helper()
	select {
	case got := <-f.got:
		t.Fatalf("unexpected entry %q", got)
	case <-time.After(60 * time.Millisecond):
	}
}

func TestFollowAcrossMidnight(t *testing.T) {
	root := t.TempDir()
	beforeMidnight := time.Date(2026, 11, 20, 23, 59, 58, 0, time.UTC)
	clock := &fakeClock{t: beforeMidnight}
	w := newTestWriter(t, root, Options{Clock: clock.Now})
	writeAll(t, w, text(beforeMidnight, "ava", "already there"))
	r := NewReader(root, ReaderOptions{Clock: clock.Now, PollInterval: 5 * time.Millisecond})
	f := startFollow(t, r, Query{})
	f.expectNothing(t)
	writeAll(t, w, text(beforeMidnight.Add(time.Second), "ava", "a"), text(beforeMidnight.Add(time.Second), "S-aaaaaa", "sub"))
	f.expect(t, "ava:a", "S-aaaaaa:sub")

	afterMidnight := beforeMidnight.Add(3 * time.Second)
	clock.Set(afterMidnight)
	writeAll(t, w, text(afterMidnight, "ava", "b"))
	f.expect(t, "ava:b")
	// An entry stamped before midnight and written after it still shows.
	writeAll(t, w, text(beforeMidnight.Add(1999*time.Millisecond), "ava", "late"))
	f.expect(t, "ava:late")
	writeAll(t, w, text(afterMidnight, "ava", "c"))
	f.expect(t, "ava:c")
	f.expectNothing(t)
}

func TestFollowWaitsForTheNewline(t *testing.T) {
	root := t.TempDir()
	path := DailyPath(root, day1)
	one, _ := text(day1, "ava", "one").MarshalJSON()
	two, _ := text(day1, "ava", "two").MarshalJSON()
	writeLines(t, path, string(one)+"\n")
	var mu sync.Mutex
	var skips []Skip
	r := NewReader(root, ReaderOptions{Clock: func() time.Time { return day1 }, PollInterval: 5 * time.Millisecond,
		OnSkip: func(s Skip) { mu.Lock(); skips = append(skips, s); mu.Unlock() }})
	f := startFollow(t, r, Query{})
	appendTo := func(s string) {
		fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.WriteString(s)
		fh.Close()
	}
	appendTo(string(two[:25]))
	f.expectNothing(t)
	appendTo(string(two[25:]) + "\n")
	f.expect(t, "ava:two")
	appendTo("garbage\n")
	appendTo(string(one) + "\n")
	f.expect(t, "ava:one")
	f.expectNothing(t)
	mu.Lock()
	defer mu.Unlock()
	if len(skips) != 1 || skips[0].Line != 3 || skips[0].File != path {
		t.Errorf("skips %v, want %s:3", skips, path)
	}
}

func TestFollowSubagentTrace(t *testing.T) {
	root := t.TempDir()
	w := newTestWriter(t, root, Options{})
	r := NewReader(root, ReaderOptions{PollInterval: 5 * time.Millisecond})
	// The trace does not exist yet: Follow waits for it.
	late := startFollow(t, r, Query{Agent: "S-cccccc"})
	for i := range 5 {
		writeAll(t, w, text(day1, "S-aaaaaa", string(rune('1'+i))), text(day1, "ava", "not this"))
	}
	f := startFollow(t, r, Query{Agent: "S-aaaaaa", Limit: 2})
	f.expect(t, "S-aaaaaa:4", "S-aaaaaa:5")
	writeAll(t, w, text(day1, "S-aaaaaa", "6"), text(day1, "S-bbbbbb", "other"), text(day1, "S-cccccc", "new"))
	f.expect(t, "S-aaaaaa:6")
	f.expectNothing(t)
	late.expect(t, "S-cccccc:new")
}

func TestFollowHistorySinceAndFilters(t *testing.T) {
	root := t.TempDir()
	today := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	w := newTestWriter(t, root, Options{Clock: func() time.Time { return today }})
	writeAll(t, w,
		ev(today.Add(-48*time.Hour), "ava", event.Error, event.TextContent{Text: "too old"}),
		ev(today.Add(-10*time.Hour), "ava", event.Error, event.TextContent{Text: "yesterday"}),
		text(today.Add(-time.Hour), "ava", "not an error"),
		ev(today.Add(-time.Hour), "ava", event.Error, event.TextContent{Text: "today"}))
	r := NewReader(root, ReaderOptions{Clock: func() time.Time { return today }, PollInterval: 5 * time.Millisecond})
	f := startFollow(t, r, Query{Since: today.Add(-24 * time.Hour), Types: []event.Type{event.Error}})
	f.expect(t, "ava:yesterday", "ava:today")
	writeAll(t, w, text(today, "ava", "still not"), ev(today, "ava", event.Error, event.TextContent{Text: "live"}))
	f.expect(t, "ava:live")
	f.expectNothing(t)

	g := startFollow(t, r, Query{Limit: 1, Search: "NOT AN"})
	g.expect(t, "ava:not an error")
	g.expectNothing(t)
}
