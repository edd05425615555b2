package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/event"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pub(t *testing.T, h *event.Hub, session string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := h.Publish(event.Event{Session: session, Agent: "ava", Type: event.Activity}); err != nil {
			t.Error(err) // not Fatal: pub also runs in goroutines
			return
		}
	}
}

func TestSequencePerSessionAndSinkOrder(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]uint64{}
	h := event.NewHub(event.SinkFunc(func(ev event.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got[ev.Session] = append(got[ev.Session], ev.Seq)
		return nil
	}))
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Go(func() {
			for i := 0; i < 40; i++ {
				s := "a"
				if i%2 == 1 {
					s = "b"
				}
				if _, err := h.Publish(event.Event{Session: s, Type: event.Activity}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range []string{"a", "b"} {
		seqs := got[s]
		if len(seqs) != 1000 {
			t.Fatalf("%s: %d events", s, len(seqs))
		}
		for i, q := range seqs {
			if q != uint64(i+1) {
				t.Fatalf("%s: sink saw seq %d at position %d: out of order or holed", s, q, i)
			}
		}
	}
}

func TestSubscriberReplayThenLive(t *testing.T) {
	h := event.NewHub()
	pub(t, h, "s", 3)
	sub := h.Journal("s", 0).Subscribe(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := sub.Next(ctx)
	if err != nil || len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 {
		t.Fatalf("replay: %v %v", evs, err)
	}
	go pub(t, h, "s", 1)
	evs, err = sub.Next(ctx)
	if err != nil || len(evs) != 1 || evs[0].Seq != 4 {
		t.Fatalf("live: %v %v", evs, err)
	}
	h.Forget("s")
	if _, err := sub.Next(ctx); !errors.Is(err, event.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestSlowSubscriberNeverStallsAndIsToldWhatItMissed(t *testing.T) {
	h := event.NewHub()
	h.SetRetain(10)
	sub := h.Journal("s", 0).Subscribe(0)
	done := make(chan struct{})
	go func() { pub(t, h, "s", 100); close(done) }()
	select {
	case <-done: // the publisher finished although nobody read
	case <-time.After(5 * time.Second):
		t.Fatal("publisher stalled on a subscriber that does not read")
	}
	evs, err := sub.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Type != event.Gap {
		t.Fatalf("first event %s, want Gap", evs[0].Type)
	}
	var gap event.GapContent
	if err := json.Unmarshal(evs[0].Content, &gap); err != nil || gap.From != 1 || gap.To != 90 {
		t.Fatalf("gap %+v %v, want 1..90", gap, err)
	}
	if len(evs) != 11 || evs[1].Seq != 91 || evs[10].Seq != 100 {
		t.Fatalf("after gap got %d events from %d", len(evs)-1, evs[1].Seq)
	}
}

func TestSinkErrorIsReturnedButLiveViewStillSeesEvent(t *testing.T) {
	h := event.NewHub(event.SinkFunc(func(event.Event) error { return errors.New("disk full") }))
	_, err := h.Publish(event.Event{Session: "s", Type: event.Error})
	if err == nil {
		t.Fatal("sink error swallowed")
	}
	evs, _ := h.Journal("s", 0).Subscribe(0).Next(context.Background())
	if len(evs) != 1 {
		t.Fatalf("live view lost the event")
	}
}

func TestJournalResumesAfterStoredSeq(t *testing.T) {
	h := event.NewHub()
	h.Journal("s", 41)
	ev, err := h.Publish(event.Event{Session: "s", Type: event.Activity})
	if err != nil || ev.Seq != 42 {
		t.Fatalf("seq %d err %v, want 42", ev.Seq, err)
	}
}

func TestAuditJSONShape(t *testing.T) {
	ev := event.New(event.ToolCall, event.ToolCallContent{ID: "1", Name: "web_search", Args: json.RawMessage(`{"q":1}`)})
	ev.Seq, ev.Session, ev.Agent, ev.Time = 7, "ava:cli:x", "S-7f3a2b", time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.FixedZone("x", 3600))
	ev.Meta = event.Meta{InputTokens: 3, ModelID: "anthropic/claude-haiku-4-5"}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":7,"timestamp":"2026-01-02T02:04:05.006Z","sessionId":"ava:cli:x","agentId":"S-7f3a2b","eventType":"ToolCall","content":{"id":"1","name":"web_search","args":{"q":1}},"metadata":{"inputTokens":3,"modelId":"anthropic/claude-haiku-4-5"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back event.Event
	if err := json.Unmarshal(b, &back); err != nil || back.Seq != 7 || !back.Time.Equal(ev.Time) || back.Type != event.ToolCall {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}
