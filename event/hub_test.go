package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/event"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pub(t *testing.T, h *event.Hub, session string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := h.Publish(event.Event{Session: session, Agent: "ava", Type: event.UserMessage}); err != nil {
			t.Error(err) // not Fatal: pub also runs in goroutines
			return
		}
	}
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// readAll reads a subscription until it has the event numbered last.
func readAll(t *testing.T, sub *event.Subscription, last uint64) []event.Event {
	t.Helper()
	var out []event.Event
	for sub.Cursor() < last {
		evs, err := sub.Next(ctx5(t))
		if err != nil {
			t.Fatalf("after #%d: %v", sub.Cursor(), err)
		}
		out = append(out, evs...)
	}
	return out
}

// wantRun fails unless the kept events are numbered from..to by one.
func wantRun(t *testing.T, evs []event.Event, from, to uint64) {
	t.Helper()
	next := from
	for _, ev := range evs {
		if ev.Seq == 0 {
			continue
		}
		if ev.Seq != next {
			t.Fatalf("got #%d, want #%d", ev.Seq, next)
		}
		next++
	}
	if next != to+1 {
		t.Fatalf("ended at #%d, want #%d", next-1, to)
	}
}

func TestSequencePerSessionAndSinkOrder(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]uint64{}
	h := event.NewHub(nil, event.SinkFunc(func(ev event.Event) error {
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
				if _, err := h.Publish(event.Event{Session: s, Type: event.ToolCall}); err != nil {
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

func TestLiveOnlyEventsAreNotNumberedOrStored(t *testing.T) {
	log := event.NewMemoryLog()
	h := event.NewHub(log)
	sub := h.Subscribe("s", 0)
	pub(t, h, "s", 1)
	ev, err := h.Publish(event.Event{Session: "s", Type: event.TextDelta})
	if err != nil || ev.Seq != 0 {
		t.Fatalf("live-only event numbered %d (%v)", ev.Seq, err)
	}
	pub(t, h, "s", 1)
	evs := readAll(t, sub, 2)
	if len(evs) != 3 || evs[1].Type != event.TextDelta {
		t.Fatalf("subscriber saw %v", evs)
	}
	stored, _ := log.ReadEvents(context.Background(), "s", 0, 0)
	wantRun(t, stored, 1, 2)
	if len(stored) != 2 {
		t.Fatalf("stored %d events, want the 2 kept ones", len(stored))
	}
}

func TestSubscriberReplayThenLive(t *testing.T) {
	h := event.NewHub(nil)
	pub(t, h, "s", 3)
	sub := h.Subscribe("s", 1)
	evs, err := sub.Next(ctx5(t))
	if err != nil || len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 {
		t.Fatalf("replay: %v %v", evs, err)
	}
	go pub(t, h, "s", 1)
	evs, err = sub.Next(ctx5(t))
	if err != nil || len(evs) != 1 || evs[0].Seq != 4 {
		t.Fatalf("live: %v %v", evs, err)
	}
	h.Forget("s")
	if _, err := sub.Next(ctx5(t)); !errors.Is(err, event.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// TestFollowOutlivesForget: a Follow subscription is not ended when the
// session's journal leaves memory; it reads on from the next journal,
// without a gap or a repeat, while a plain subscription ends.
func TestFollowOutlivesForget(t *testing.T) {
	h := event.NewHub(nil)
	pub(t, h, "s", 2)
	sub := h.Follow("s", 0)
	defer sub.Close()
	plain := h.Subscribe("s", 2)
	defer plain.Close()
	wantRun(t, readAll(t, sub, 2), 1, 2)
	for round := uint64(0); round < 3; round++ {
		h.Forget("s")
		go pub(t, h, "s", 1)
		wantRun(t, readAll(t, sub, 3+round), 3+round, 3+round)
	}
	if _, err := plain.Next(ctx5(t)); !errors.Is(err, event.ErrClosed) {
		t.Fatalf("a plain subscription after Forget: %v, want ErrClosed", err)
	}
}

func TestSlowSubscriberCatchesUpFromTheLog(t *testing.T) {
	h := event.NewHub(nil)
	h.SetRetain(10)
	sub := h.Subscribe("s", 0)
	done := make(chan struct{})
	go func() { pub(t, h, "s", 100); close(done) }()
	select {
	case <-done: // the publisher finished although nobody read
	case <-time.After(5 * time.Second):
		t.Fatal("publisher stalled on a subscriber that does not read")
	}
	wantRun(t, readAll(t, sub, 100), 1, 100)
}

func TestForgottenSessionContinuesFromTheLog(t *testing.T) {
	log := event.NewMemoryLog()
	h := event.NewHub(log)
	pub(t, h, "s", 5)
	h.Forget("s")
	ev, err := h.Publish(event.Event{Session: "s", Type: event.SubagentComplete})
	if err != nil || ev.Seq != 6 {
		t.Fatalf("after forget: #%d %v, want #6", ev.Seq, err)
	}
	// A new hub over the same log (the next process) goes on too.
	h2 := event.NewHub(log)
	ev, err = h2.Publish(event.Event{Session: "s", Type: event.UserMessage})
	if err != nil || ev.Seq != 7 {
		t.Fatalf("next process: #%d %v, want #7", ev.Seq, err)
	}
	wantRun(t, readAll(t, h2.Subscribe("s", 0), 7), 1, 7)
}

// TestTwoHubsOnOneLogNeverReuseNumbers is two processes publishing to the
// same sessions at once: the log refuses a taken number and the loser
// draws the next, so every session's numbers go up by one.
func TestTwoHubsOnOneLogNeverReuseNumbers(t *testing.T) {
	log := event.NewMemoryLog()
	a, b := event.NewHub(log), event.NewHub(log)
	sub := a.Subscribe("s0", 0)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		h := a
		if g%2 == 1 {
			h = b
		}
		wg.Go(func() {
			for i := 0; i < 200; i++ {
				pub(t, h, fmt.Sprintf("s%d", i%4), 1)
			}
		})
	}
	wg.Wait()
	for s := 0; s < 4; s++ {
		stored, _ := log.ReadEvents(context.Background(), fmt.Sprintf("s%d", s), 0, 0)
		wantRun(t, stored, 1, 400)
	}
	// a's subscriber sees b's events too, from the log.
	wantRun(t, readAll(t, sub, 400), 1, 400)
}

type failingLog struct{ event.Log }

func (failingLog) AppendEvents(context.Context, []event.Event) error { return errors.New("disk full") }

func TestUnstorableEventIsNotDelivered(t *testing.T) {
	delivered := 0
	h := event.NewHub(failingLog{event.NewMemoryLog()}, event.SinkFunc(func(event.Event) error { delivered++; return nil }))
	h.SetOutageBound(200 * time.Millisecond)
	if _, err := h.Publish(event.Event{Session: "s", Type: event.Error}); err == nil {
		t.Fatal("log error swallowed")
	}
	if delivered != 0 {
		t.Fatal("an event that was not stored reached a sink")
	}
}

// outageLog fails every call until up is set: a database restarting.
type outageLog struct {
	event.Log
	up    atomic.Bool
	fails atomic.Int32
}

func (l *outageLog) AppendEvents(ctx context.Context, evs []event.Event) error {
	if !l.up.Load() {
		l.fails.Add(1)
		return errors.New("connection refused")
	}
	return l.Log.AppendEvents(ctx, evs)
}

// A Log that is briefly unavailable (a database restart) is retried: the
// publisher waits and its event is stored once, numbered in order, with
// no error; a run never ends because the log was briefly down.
func TestPublishRidesOutAShortOutage(t *testing.T) {
	log := &outageLog{Log: event.NewMemoryLog()}
	h := event.NewHub(log)
	log.up.Store(true)
	pub(t, h, "s", 1) // numbered 1 while the log is up
	log.up.Store(false)
	go func() {
		time.Sleep(300 * time.Millisecond)
		log.up.Store(true)
	}()
	ev, err := h.Publish(event.Event{Session: "s", Type: event.Error})
	if err != nil {
		t.Fatalf("publish during a short outage: %v", err)
	}
	if ev.Seq != 2 || log.fails.Load() == 0 {
		t.Fatalf("seq %d after %d failed appends; want 2 after some", ev.Seq, log.fails.Load())
	}
	stored, err := log.ReadEvents(ctx5(t), "s", 0, 10)
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored %d events (%v), want 2", len(stored), err)
	}
}

func TestSinkErrorIsReturnedButLiveViewStillSeesEvent(t *testing.T) {
	h := event.NewHub(nil, event.SinkFunc(func(event.Event) error { return errors.New("disk full") }))
	sub := h.Subscribe("s", 0)
	if _, err := h.Publish(event.Event{Session: "s", Type: event.Error}); err == nil {
		t.Fatal("sink error swallowed")
	}
	if evs, _ := sub.Next(ctx5(t)); len(evs) != 1 {
		t.Fatalf("live view lost the event")
	}
}

// TestForgetRacesPublish is the Ctrl-C panic of issue 10: a journal
// closed (forgotten) while a publisher appends to it must not close its
// wake channel twice, and nothing is lost.
func TestForgetRacesPublish(t *testing.T) {
	log := event.NewMemoryLog()
	h := event.NewHub(log)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() { pub(t, h, "s", 300) })
	}
	wg.Go(func() {
		for i := 0; i < 300; i++ {
			h.Forget("s")
			if rand.IntN(4) == 0 {
				time.Sleep(time.Microsecond)
			}
		}
	})
	wg.Wait()
	stored, _ := log.ReadEvents(context.Background(), "s", 0, 0)
	wantRun(t, stored, 1, 1200)
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

// Fresh skips the Log read for a session believed new; a wrong belief
// costs a retry, never a reused number.
func TestFreshSessionThatIsNotNew(t *testing.T) {
	log := event.NewMemoryLog()
	pub(t, event.NewHub(log), "s", 3)
	h := event.NewHub(log)
	h.Fresh("s")
	ev, err := h.Publish(event.Event{Session: "s", Type: event.UserMessage})
	if err != nil || ev.Seq != 4 {
		t.Fatalf("#%d %v, want #4", ev.Seq, err)
	}
	h.Fresh("new")
	if ev, err := h.Publish(event.Event{Session: "new", Type: event.UserMessage}); err != nil || ev.Seq != 1 {
		t.Fatalf("new session: #%d %v", ev.Seq, err)
	}
}

// TestNumberedFromTheCallersRead: a session whose last number its caller
// read numbers its next event from it without reading the Log; a stale
// number costs a retry and never a reused number.
func TestNumberedFromTheCallersRead(t *testing.T) {
	log := &countingLog{Log: event.NewMemoryLog()}
	pub(t, event.NewHub(log), "s", 3)
	h := event.NewHub(log)
	sub := h.Follow("s", 3)
	defer sub.Close()
	before := log.lastSeqs.Load()
	h.Numbered("s", 3)
	if ev, err := h.Publish(event.Event{Session: "s", Type: event.UserMessage}); err != nil || ev.Seq != 4 {
		t.Fatalf("#%d %v, want #4", ev.Seq, err)
	}
	if n := log.lastSeqs.Load() - before; n != 0 {
		t.Fatalf("the Log's last number was read %d times", n)
	}
	// Another process numbered on meanwhile: the stale number is met at
	// the append and read again.
	other := event.NewHub(log)
	pub(t, other, "t", 2)
	st := h.Follow("t", 1)
	defer st.Close()
	h.Numbered("t", 1)
	if ev, err := h.Publish(event.Event{Session: "t", Type: event.UserMessage}); err != nil || ev.Seq != 3 {
		t.Fatalf("stale: #%d %v, want #3", ev.Seq, err)
	}
	// A journal that knows its numbers keeps them.
	h.Numbered("s", 0)
	if ev, err := h.Publish(event.Event{Session: "s", Type: event.UserMessage}); err != nil || ev.Seq != 5 {
		t.Fatalf("#%d %v, want #5", ev.Seq, err)
	}
	// A journal opened only for a follower leaves memory with it, told
	// its number or not; a session not in memory is left alone.
	n := h.InMemory()
	f := h.Follow("u", 0)
	h.Numbered("u", 0)
	f.Close()
	h.Numbered("v", 7)
	if got := h.InMemory(); got != n {
		t.Fatalf("%d journals in memory after a follower came and went, want %d", got, n)
	}
}

// Events published without waiting keep their order, live-only ones
// included, and each kept one is stored before it is seen.
func TestPublishAsyncKeepsOrder(t *testing.T) {
	log := event.NewMemoryLog()
	hub := event.NewHub(log)
	const key = "ava:test:order"
	sub := hub.Subscribe(key, 0)
	defer sub.Close()
	var wg sync.WaitGroup
	const n = 500
	for i := range n {
		typ := event.ToolCall
		if i%3 == 0 {
			typ = event.TextDelta
		}
		ev := event.New(typ, event.TextContent{Text: fmt.Sprint(i)})
		ev.Session = key
		wg.Add(1)
		hub.PublishAsync(ev, func(got event.Event, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var got []event.Event
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < n {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		got = append(got, evs...)
	}
	var seq uint64
	for i, ev := range got {
		var c event.TextContent
		_ = ev.Decode(&c)
		if c.Text != fmt.Sprint(i) {
			t.Fatalf("event %d is %q", i, c.Text)
		}
		if ev.Type.Kept() {
			if seq++; ev.Seq != seq {
				t.Fatalf("event %d numbered %d, want %d", i, ev.Seq, seq)
			}
		}
	}
	stored, err := log.ReadEvents(ctx, key, 0, 0)
	if err != nil || uint64(len(stored)) != seq {
		t.Fatalf("%d stored (%v), want %d", len(stored), err, seq)
	}
}

// gateLog holds every AppendEvents until open is closed.
type gateLog struct {
	event.Log
	open chan struct{}
}

func (l *gateLog) AppendEvents(ctx context.Context, evs []event.Event) error {
	<-l.open
	return l.Log.AppendEvents(ctx, evs)
}

// batchSink records the batches it is given and fails the events whose
// content is "bad".
type batchSink struct {
	mu      sync.Mutex
	batches [][]uint64
}

func (s *batchSink) Deliver(ev event.Event) error {
	return s.DeliverBatch([]event.Event{ev})[0]
}

func (s *batchSink) DeliverBatch(evs []event.Event) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := make([]error, len(evs))
	var seqs []uint64
	for i, ev := range evs {
		seqs = append(seqs, ev.Seq)
		if string(ev.Content) == `"bad"` {
			errs[i] = errors.New("bad entry")
		}
	}
	s.batches = append(s.batches, seqs)
	return errs
}

// A BatchSink gets the events one commit stored in one call, in order
// (so the session files sync once for all of them), and its error for
// one event goes to that event's publisher only.
func TestBatchSinkTakesACommitAtOnce(t *testing.T) {
	log := &gateLog{Log: event.NewMemoryLog(), open: make(chan struct{})}
	sink := &batchSink{}
	h := event.NewHub(log, sink)
	const n = 10
	errs := make(chan error, n)
	for i := range n {
		content := json.RawMessage(`"ok"`)
		if i == 4 {
			content = json.RawMessage(`"bad"`)
		}
		// The first is held by the log; the others queue behind it.
		h.PublishAsync(event.Event{Session: "s", Type: event.UserMessage, Content: content}, func(_ event.Event, err error) { errs <- err })
	}
	close(log.open)
	failed := 0
	for range n {
		if err := <-errs; err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d publishers got an error, want 1 (the bad event's)", failed)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var seqs []uint64
	for _, b := range sink.batches {
		seqs = append(seqs, b...)
	}
	if len(sink.batches) >= n || len(seqs) != n {
		t.Fatalf("sink batches %v: want the %d events in fewer calls than events", sink.batches, n)
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("sink saw %v, want 1..%d in order", seqs, n)
		}
	}
}

// TestReadyWithoutWaiting: Ready returns what can be read now, never
// blocks, and hands a channel closed when more is published, so one
// goroutine can wait on it next to its other channels; reading on with
// Ready loses and repeats nothing, from the Log and from memory.
func TestReadyWithoutWaiting(t *testing.T) {
	h := event.NewHub(nil)
	pub(t, h, "s", 3)
	sub := h.Follow("s", 1)
	defer sub.Close()
	evs, wake, err := sub.Ready(ctx5(t))
	if err != nil || len(evs) != 2 {
		t.Fatalf("replay: %v %v", evs, err)
	}
	wantRun(t, evs, 2, 3)
	<-wake // read from the Log: more may be ready at once
	evs, wake, err = sub.Ready(ctx5(t))
	if err != nil || len(evs) != 0 {
		t.Fatalf("caught up: %v %v", evs, err)
	}
	select {
	case <-wake:
		t.Fatal("woken with nothing published")
	default:
	}
	pub(t, h, "s", 2)
	<-wake
	evs, _, err = sub.Ready(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	wantRun(t, evs, 4, 5)
	h.Forget("s") // a Follow reads on from the next journal
	pub(t, h, "s", 1)
	var got []event.Event
	for len(got) == 0 {
		evs, wake, err = sub.Ready(ctx5(t))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, evs...)
		if len(got) == 0 {
			<-wake
		}
	}
	wantRun(t, got, 6, 6)
}

// TestReadyReusesItsMemory: a live stream reading with Ready allocates
// nothing per event (a subscriber of a busy session would otherwise copy
// every event into a new slice, 200,000 times a second at 1,000
// subscribers of 200 events/s).
func TestReadyReusesItsMemory(t *testing.T) {
	h, ctx := event.NewHub(nil), ctx5(t)
	sub := h.Subscribe("s", 0)
	defer sub.Close()
	live := event.Event{Session: "s", Agent: "ava", Type: event.TextDelta}
	publish := func() {
		if _, err := h.Publish(live); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 * event.DefaultRetain { // the window at its size
		publish()
		if _, _, err := sub.Ready(ctx); err != nil {
			t.Fatal(err)
		}
	}
	alone := testing.AllocsPerRun(200, publish)
	if _, _, err := sub.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	read := testing.AllocsPerRun(200, func() {
		publish()
		if evs, _, err := sub.Ready(ctx); err != nil || len(evs) != 1 {
			t.Fatalf("%d events, %v", len(evs), err)
		}
	})
	if read > alone {
		t.Fatalf("publishing and reading an event allocates %.1f times, publishing it %.1f", read, alone)
	}
}

// TestNextEventsAreTheCallers: what Next returned stays as it was after
// the next Next (a reader hands its events to another goroutine), unlike
// Ready's, which are valid until the next Ready.
func TestNextEventsAreTheCallers(t *testing.T) {
	h := event.NewHub(nil)
	sub := h.Subscribe("s", 0)
	defer sub.Close()
	pub(t, h, "s", 2)
	first, err := sub.Next(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	kept := append([]event.Event(nil), first...)
	pub(t, h, "s", 1) // fits in the memory of the first two
	if _, err := sub.Next(ctx5(t)); err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if first[i].Seq != kept[i].Seq {
			t.Fatalf("the first Next's events were overwritten: %v, was %v", first, kept)
		}
	}
}

// A run's leased event with Until rides out an outage longer than the
// hub's bound (the run pauses rather than ending): it is stored once the
// log is back; without Until, or once Until closes, the bound applies.
func TestLeasedEventRidesOutALongOutage(t *testing.T) {
	log := &outageLog{Log: event.NewMemoryLog()}
	h := event.NewHub(log)
	h.SetOutageBound(100 * time.Millisecond)
	until := make(chan struct{})
	leased := event.Fence{Run: "r", Owner: "me", Until: until}
	go func() {
		time.Sleep(500 * time.Millisecond)
		log.up.Store(true)
	}()
	ev, err := h.Publish(event.Event{Session: "s", Type: event.Error, Fence: leased})
	if err != nil || ev.Seq != 1 {
		t.Fatalf("leased event through an outage five times the bound: seq %d, %v", ev.Seq, err)
	}

	log.up.Store(false)
	if _, err := h.Publish(event.Event{Session: "s", Type: event.Error, Fence: event.Fence{Run: "r", Owner: "me"}}); err == nil {
		t.Fatal("a leased event without Until outlived the bound")
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		close(until)
	}()
	start := time.Now()
	if _, err := h.Publish(event.Event{Session: "s", Type: event.Error, Fence: leased}); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("after Until closed: %v after %s, want an error soon after", err, time.Since(start))
	}
}

// Past the bound, a leased event waits out only an outage: a Log that
// keeps refusing the write for another reason fails it, so a run is
// never held for good by a write that cannot succeed.
func TestLeasedEventRefusedForAnotherReasonFailsAfterTheBound(t *testing.T) {
	log := &outageLog{Log: event.NewMemoryLog()}
	h := event.NewHub(log)
	h.SetOutageBound(100 * time.Millisecond)
	h.SetTransient(func(err error) bool { return false }) // "connection refused" counts as a refusal here
	start := time.Now()
	_, err := h.Publish(event.Event{Session: "s", Type: event.Error, Fence: event.Fence{Run: "r", Owner: "me", Until: make(chan struct{})}})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a refused leased event: %v after %s, want an error soon after the bound", err, time.Since(start))
	}
}
