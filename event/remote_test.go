package event_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/redact"
)

// countingLog is a Log that counts its ReadEvents and LastSeq calls.
type countingLog struct {
	event.Log
	reads    atomic.Int64
	lastSeqs atomic.Int64
}

func (l *countingLog) LastSeq(ctx context.Context, session string) (uint64, error) {
	l.lastSeqs.Add(1)
	return l.Log.LastSeq(ctx, session)
}

func (l *countingLog) ReadEvents(ctx context.Context, session string, after uint64, limit int) ([]event.Event, error) {
	l.reads.Add(1)
	return l.Log.ReadEvents(ctx, session, after, limit)
}

// TestStoredCatchesUpAFollower plays two processes on one Log: events
// published on hub a reach a live subscriber of hub b when b is told
// they are stored, in order and once each, whoever publishes.
func TestStoredCatchesUpAFollower(t *testing.T) {
	log := event.NewMemoryLog()
	a, b := event.NewHub(log), event.NewHub(log)
	const s = "ava:cli:two"
	pub(t, a, s, 2)
	sub := b.Follow(s, 0)
	defer sub.Close()
	wantRun(t, readAll(t, sub, 2), 1, 2) // replayed from the Log
	for i := 0; i < 5; i++ {
		pub(t, a, s, 3)
		last, _ := a.LastSeq(s)
		if err := b.Stored(s, last); err != nil {
			t.Fatal(err)
		}
		pub(t, b, s, 1)
	}
	wantRun(t, readAll(t, sub, 22), 3, 22)
}

// staleLog is a Log whose LastSeq can be made to answer an old number,
// as when another process stores right after it was read.
type staleLog struct {
	event.Log
	last atomic.Int64 // answered by LastSeq when > 0
}

func (l *staleLog) LastSeq(ctx context.Context, session string) (uint64, error) {
	if n := l.last.Load(); n > 0 {
		return uint64(n), nil
	}
	return l.Log.LastSeq(ctx, session)
}

// TestStoredBeforeAttach tells a hub of a stored event between a
// subscriber reading the last number and attaching: the subscriber reads
// it from the Log instead of waiting for a later event.
func TestStoredBeforeAttach(t *testing.T) {
	log := &staleLog{Log: event.NewMemoryLog()}
	a, b := event.NewHub(log), event.NewHub(log)
	const s = "ava:cli:race"
	pub(t, a, s, 4)
	j := b.Journal(s) // in memory, nobody reading yet
	if err := b.Stored(s, 4); err != nil {
		t.Fatal(err)
	}
	log.last.Store(3)
	sub := j.Subscribe(3) // attaches at the end, believing #3 is the last
	log.last.Store(0)
	wantRun(t, readAll(t, sub, 4), 4, 4)
}

// TestStoredReadsOnlyWhenNeeded: no journal, no read and no journal
// made; this process's own events, no read; a journal nobody attached
// to, no read.
func TestStoredReadsOnlyWhenNeeded(t *testing.T) {
	log := &countingLog{Log: event.NewMemoryLog()}
	h := event.NewHub(log)
	if err := h.Stored("elsewhere", 7); err != nil || h.InMemory() != 0 || log.reads.Load() != 0 {
		t.Fatalf("unknown session: err %v, %d journals, %d reads", err, h.InMemory(), log.reads.Load())
	}
	const s = "ava:cli:own"
	sub := h.Subscribe(s, 0)
	defer sub.Close()
	pub(t, h, s, 3)
	readAll(t, sub, 3)
	before := log.reads.Load()
	for seq := uint64(1); seq <= 3; seq++ {
		if err := h.Stored(s, seq); err != nil {
			t.Fatal(err)
		}
	}
	if n := log.reads.Load() - before; n != 0 {
		t.Fatalf("own notifications read the Log %d times", n)
	}
	if got := h.Sessions(); len(got) != 1 || got[0] != s {
		t.Fatalf("sessions in memory: %v", got)
	}
}

// TestRelayAndLive relays live-only events, masked as subscribers see
// them, from one hub to another's subscribers; kept events are not
// relayed, and Live ignores them.
func TestRelayAndLive(t *testing.T) {
	log := event.NewMemoryLog()
	a, b := event.NewHub(log), event.NewHub(log)
	a.SetRedactor(redact.New(redact.Options{}))
	var mu sync.Mutex
	var relayed []event.Event
	a.SetRelay(func(ev event.Event) {
		mu.Lock()
		defer mu.Unlock()
		relayed = append(relayed, ev)
	})
	const s = "ava:cli:live"
	sub := b.Subscribe(s, 0)
	defer sub.Close()
	for _, piece := range []string{"token ", ghToken, " done "} {
		if _, err := a.Publish(event.Event{Session: s, Type: event.TextDelta,
			Content: event.New(event.TextDelta, event.TextContent{Text: piece}).Content}); err != nil {
			t.Fatal(err)
		}
	}
	pub(t, a, s, 1) // releases what is held
	mu.Lock()
	evs := append([]event.Event(nil), relayed...)
	mu.Unlock()
	var text strings.Builder
	for _, ev := range evs {
		if ev.Type != event.TextDelta {
			t.Fatalf("relayed %s", ev.Type)
		}
		var c event.TextContent
		if err := ev.Decode(&c); err != nil {
			t.Fatal(err)
		}
		text.WriteString(c.Text)
		b.Live(ev)
	}
	if strings.Contains(text.String(), ghToken) || !strings.HasPrefix(text.String(), "token ") {
		t.Fatalf("relayed text %q", text.String())
	}
	b.Live(event.Event{Session: s, Type: event.UserMessage}) // ignored
	b.Live(event.Event{Session: "nobody", Type: event.TextDelta})
	got, err := sub.Poll(ctx5(t))
	if err != nil || len(got) != len(evs) {
		t.Fatalf("b's subscriber got %d events (%v), want %d", len(got), err, len(evs))
	}
	if b.InMemory() != 1 {
		t.Fatalf("Live made a journal: %d in memory", b.InMemory())
	}
	a.SetRelay(nil)
	if _, err := a.Publish(event.Event{Session: s, Type: event.Activity}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(relayed) != len(evs) {
		t.Fatal("relayed after SetRelay(nil)")
	}
}
