package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avaagent/ava/event"
)

// RelayDelay is how long a Relay gathers a session's live-only events
// before it sends them in one notification.
const RelayDelay = 50 * time.Millisecond

// relayBuffer bounds the live-only events waiting to be sent; past it
// they are dropped (and counted), never waited for.
const relayBuffer = 4096

// Relay makes an event hub serve the sessions of every process sharing
// the store's database live, whichever process publishes:
//
//   - kept events: AppendEvents notifies ChannelEvents on commit; the
//     relay hands each notification to Hub.Stored, which reads the new
//     events from the store into the session's journal if this process
//     has it in memory;
//   - live-only events (streamed text): the hub hands each one published
//     here to the relay (Hub.SetRelay), which sends them on ChannelLive,
//     gathered per session for RelayDelay, tagged with this process's
//     origin; the others append them to their journals (Hub.Live) and
//     this one ignores its own;
//   - each time the listening connection is (re)opened, every journal in
//     memory is caught up from the store, since notifications sent while
//     it was down are lost. Live-only events sent meanwhile are lost.
//
// The publishing path never waits for the relay: live-only events beyond
// a bounded buffer are dropped and counted.
type Relay struct {
	store  *Store
	hub    *event.Hub
	log    *slog.Logger
	origin string
	in     chan event.Event
	// dropped counts live-only events dropped with the buffer full;
	// reported counts those already logged.
	dropped, reported atomic.Uint64
}

// NewRelay returns a relay between hub and the other processes on
// store's database; Run starts it. logger nil discards its logs.
func NewRelay(store *Store, hub *event.Hub, logger *slog.Logger) *Relay {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &Relay{store: store, hub: hub, log: logger, origin: hex.EncodeToString(b[:]),
		in: make(chan event.Event, relayBuffer)}
}

// Origin is the random ID tagging this relay's live notifications.
func (r *Relay) Origin() string { return r.origin }

// Dropped is how many live-only events were dropped because the relay
// could not send them fast enough.
func (r *Relay) Dropped() uint64 { return r.dropped.Load() }

// Run relays until ctx is done, then returns nil, having stopped every
// goroutine it started and removed itself from the hub. Live-only events
// still gathered then are not sent.
func (r *Relay) Run(ctx context.Context) error {
	r.hub.SetRelay(r.offer)
	defer r.hub.SetRelay(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.send(ctx) })
	if err := r.store.Listen(ctx, []string{ChannelEvents, ChannelLive}, r.catchUp, r.dispatch); err != nil {
		return fmt.Errorf("relay events: %w", err)
	}
	return nil
}

// offer queues a live-only event published here, dropping it when the
// buffer is full. It is the hub's relay: it must not block.
func (r *Relay) offer(ev event.Event) {
	select {
	case r.in <- ev:
	default:
		r.dropped.Add(1)
	}
}

// catchUp brings every journal in memory up to date with the store: on
// (re)connecting, notifications sent meanwhile were lost.
func (r *Relay) catchUp() {
	for _, session := range r.hub.Sessions() {
		if err := r.hub.Stored(session, 0); err != nil {
			r.log.Warn("relay: catching up a session", "session", session, "err", err)
		}
	}
}

// dispatch hands one notification to the hub.
func (r *Relay) dispatch(channel, payload string) {
	switch channel {
	case ChannelEvents:
		session, last, err := parseStored(payload)
		if err == nil {
			err = r.hub.Stored(session, last)
		}
		if err != nil {
			r.log.Warn("relay: stored events", "err", err)
		}
	case ChannelLive:
		r.receiveLive(payload)
	}
}

// liveBatch is a ChannelLive payload: live-only events of one session
// from one process, in order.
type liveBatch struct {
	Origin string            `json:"origin"`
	Events []json.RawMessage `json:"events"`
}

// receiveLive appends another process's live-only events to the hub.
func (r *Relay) receiveLive(payload string) {
	var b liveBatch
	if err := json.Unmarshal([]byte(payload), &b); err != nil {
		r.log.Warn("relay: live events notification", "err", err)
		return
	}
	if b.Origin == r.origin {
		return
	}
	for _, raw := range b.Events {
		var ev event.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			r.log.Warn("relay: live event", "err", err)
			continue
		}
		r.hub.Live(ev)
	}
}

// send gathers the offered events per session for RelayDelay and sends
// each session's as few notifications as fit, until ctx is done.
func (r *Relay) send(ctx context.Context) {
	var (
		pending = map[string][]event.Event{}
		order   []string // sessions in the order their first event came
		timer   = time.NewTimer(time.Hour)
		armed   bool
	)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.in:
			if _, ok := pending[ev.Session]; !ok {
				order = append(order, ev.Session)
			}
			pending[ev.Session] = append(pending[ev.Session], ev)
			if !armed {
				timer.Reset(RelayDelay)
				armed = true
			}
		case <-timer.C:
			armed = false
			for _, session := range order {
				r.flush(ctx, pending[session])
			}
			clear(pending)
			order = order[:0]
			r.reportDropped()
		}
	}
}

// flush sends one session's gathered events.
func (r *Relay) flush(ctx context.Context, evs []event.Event) {
	payloads, err := r.payloads(evs)
	if err != nil {
		r.log.Warn("relay: live events", "session", evs[0].Session, "err", err)
		return
	}
	for _, p := range payloads {
		if err := r.store.Notify(ctx, ChannelLive, p); err != nil {
			if ctx.Err() == nil {
				r.log.Warn("relay: sending live events", "session", evs[0].Session, "err", err)
			}
			return
		}
	}
}

// payloads encodes evs as liveBatch payloads of at most MaxPayload bytes
// each. An event too big for a payload of its own is dropped.
func (r *Relay) payloads(evs []event.Event) ([]string, error) {
	head := `{"origin":` + quote(r.origin) + `,"events":[`
	const tail = `]}`
	var out []string
	cur := []byte(head)
	for _, ev := range evs {
		raw, err := ev.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", ev.Type, err)
		}
		if len(head)+len(raw)+len(tail) > MaxPayload {
			r.log.Debug("relay: live event too big to send; dropped", "session", ev.Session, "type", ev.Type, "bytes", len(raw))
			continue
		}
		if len(cur) > len(head) && len(cur)+1+len(raw)+len(tail) > MaxPayload {
			out = append(out, string(append(cur, tail...)))
			cur = []byte(head)
		}
		if len(cur) > len(head) {
			cur = append(cur, ',')
		}
		cur = append(cur, raw...)
	}
	if len(cur) > len(head) {
		out = append(out, string(append(cur, tail...)))
	}
	return out, nil
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// reportDropped logs the live-only events dropped since the last report.
func (r *Relay) reportDropped() {
	n := r.dropped.Load()
	if old := r.reported.Swap(n); n > old {
		r.log.Warn("relay: live events dropped, the relay could not keep up", "dropped", n-old, "total", n)
	}
}
