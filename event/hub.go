package event

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avaagent/ava/internal/groupcommit"
	"github.com/avaagent/ava/internal/wait"
)

// Sink receives every kept event, in sequence order per session, after
// it is stored in the Log. Deliver blocks while the sink cannot take more
// (back-pressure) and returns an error when the event could not be made
// durable.
type Sink interface {
	Deliver(ev Event) error
}

// BatchSink is a Sink that can also take several events at once: the
// kept events of one session that one commit stored, in sequence order,
// so that it can make them durable with one write and one sync instead
// of one each. DeliverBatch returns once every event is delivered (or
// failed), with nil or one error per event.
type BatchSink interface {
	Sink
	DeliverBatch(evs []Event) []error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event) error

// Deliver implements Sink.
func (f SinkFunc) Deliver(ev Event) error { return f(ev) }

// Publisher is what agents publish through.
type Publisher interface {
	Publish(ev Event) (Event, error)
}

// DefaultRetain is how many recent events a session's journal keeps in
// memory for live subscribers; older ones are read from the Log.
const DefaultRetain = 4096

// logTimeout bounds one Log call made by Publish or a subscription.
const logTimeout = 30 * time.Second

// OutageBound is how long Publish retries a store that cannot be
// written (a database restarting, a disk briefly full) before it gives
// up: the publisher waits meanwhile, so a run rides out a short outage
// instead of ending.
const OutageBound = 60 * time.Second

// maxSeqAttempts bounds how often Publish draws a new number after
// finding its number taken by another process.
const maxSeqAttempts = 64

// Hub numbers, stores and routes events: it is the only place where a
// session's sequence numbers are assigned. It is safe for concurrent use.
type Hub struct {
	log      Log
	sinks    []Sink
	redactor Redactor // nil: events are kept as published
	retain   int
	outage   time.Duration // how long a failing Log is retried (OutageBound)
	// transient tells an outage from a refusal (SetTransient).
	transient func(error) bool
	now       func() time.Time

	// relay, when set (SetRelay), hears every live-only event
	// subscribers of this process see, for other processes.
	relay atomic.Pointer[func(Event)]

	mu       sync.Mutex
	journals map[string]*Journal
}

// NewHub returns a hub storing kept events in log (nil: a MemoryLog) and
// delivering them to sinks in the given order.
func NewHub(log Log, sinks ...Sink) *Hub {
	if log == nil {
		log = NewMemoryLog()
	}
	return &Hub{log: log, sinks: sinks, retain: DefaultRetain, outage: OutageBound, now: time.Now, journals: map[string]*Journal{}}
}

// Redactor masks secrets in an event's content; redact.Redactor is one.
// Redact must not modify its argument in place and must be safe for
// concurrent use.
type Redactor interface {
	Redact(content []byte) []byte
}

// SetRedactor makes the hub mask every event's content with r as it is
// published, before it is numbered: the Log, every sink and every
// subscriber then see the same masked event, and nothing unmasked is
// stored. Streamed text (TextDelta, ThinkingDelta) is masked too: each
// journal holds back what could be the start of a secret until the
// following pieces show where it ends (see holdDelta). Call it before the
// first Publish.
func (h *Hub) SetRedactor(r Redactor) { h.redactor = r }

// redact masks ev's content when the hub has a redactor. Streamed text
// is masked later, by the journal, once it is known where its words end.
func (h *Hub) redact(ev *Event) {
	if h.redactor != nil && len(ev.Content) > 0 && !isDelta(ev.Type) {
		ev.Content = h.redactor.Redact(ev.Content)
	}
}

// SetRetain sets how many events each new journal keeps in memory
// (tests).
func (h *Hub) SetRetain(n int) { h.retain = n }

// SetTransient sets how the hub tells an outage (the store unreachable,
// its disk full) from a write the Log refuses: a leased event with
// Fence.Until waits out an outage however long, but a refusal only for
// the outage bound. Nil (the default) counts every failure as an outage.
// Call it before the first Publish.
func (h *Hub) SetTransient(f func(error) bool) { h.transient = f }

// SetOutageBound sets how long Publish retries a Log that fails before
// it returns the error (default OutageBound). Call it before the first
// Publish.
func (h *Hub) SetOutageBound(d time.Duration) { h.outage = d }

// Journal returns the session's in-memory journal, creating it if
// needed. Its numbering continues from the Log's last number.
func (h *Hub) Journal(session string) *Journal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.journalLocked(session, true)
}

// journalLocked returns the session's journal, creating it if needed.
// A journal created for subscribers only (publishing false) is dropped
// again when its last subscription closes, unless something was
// published to it meanwhile: reading an idle session's stream does not
// keep its journal in memory for ever.
func (h *Hub) journalLocked(session string, publishing bool) *Journal {
	j, ok := h.journals[session]
	if !ok {
		j = newJournal(h, session, h.retain)
		j.transient = !publishing
		h.journals[session] = j
	} else if publishing {
		j.transient = false
	}
	return j
}

// LastSeq is the session's highest stored sequence number, without
// bringing its journal into memory.
func (h *Hub) LastSeq(session string) (uint64, error) {
	h.mu.Lock()
	j, ok := h.journals[session]
	h.mu.Unlock()
	if ok {
		return j.LastSeq()
	}
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	last, err := h.log.LastSeq(ctx, session)
	if err != nil {
		return 0, fmt.Errorf("last sequence number of %s: %w", session, err)
	}
	return last, nil
}

// unsubscribe counts a closed subscription of j and drops j when it was
// created for subscribers only and the last one has closed.
func (h *Hub) unsubscribe(j *Journal) {
	h.mu.Lock()
	j.subs--
	drop := j.subs <= 0 && j.transient && h.journals[j.session] == j
	if drop {
		delete(h.journals, j.session)
	}
	h.mu.Unlock()
	if drop {
		j.Close()
	}
}

// Fresh declares a session its caller knows has no stored events yet (a
// subagent whose ID was just drawn free): its first number is 1, without
// reading the Log on the way to the first event. Should the Log hold
// events after all, the first publish meets ErrSeqTaken and numbers on
// from the Log, so a wrong guess costs a retry, never a reused number.
func (h *Hub) Fresh(session string) { h.Journal(session).numbered(0) }

// Numbered tells the hub the session's last stored number as its caller
// has just read it from the Log (a chat that follows the session from
// there): the session's next event is numbered from it without reading
// the Log again. A number another process took meanwhile is met as
// ErrSeqTaken at the append and read again, so a stale one costs a
// retry, never a reused number. It applies to a session whose journal
// is in memory (followed, or publishing) and leaves it as it was: a
// journal opened for a follower is still dropped with its last
// subscription.
func (h *Hub) Numbered(session string, last uint64) {
	h.mu.Lock()
	j, ok := h.journals[session]
	h.mu.Unlock()
	if ok {
		j.numbered(last)
	}
}

// numbered numbers j's next event after last, unless j knows its
// numbers already.
func (j *Journal) numbered(last uint64) {
	j.pub.Lock()
	defer j.pub.Unlock()
	if !j.loaded {
		j.next, j.loaded = last+1, true
	}
}

// Subscribe returns a subscription to the session's events after
// sequence number after (0: from the first), replayed from the Log, then
// live.
//
// Close the subscription when done with it: a session's journal that
// was opened only to be read leaves memory with its last subscription.
func (h *Hub) Subscribe(session string, after uint64) *Subscription {
	h.mu.Lock()
	j := h.journalLocked(session, false)
	j.subs++
	h.mu.Unlock()
	s := j.Subscribe(after)
	s.counted = true
	return s
}

// Follow is Subscribe for a reader that stays as long as it likes (a
// chat window, a live stream): when the session's journal is dropped
// from memory (Forget, once the session is idle) the subscription
// attaches to the session's next journal from where it stopped, instead
// of ending with ErrClosed. It ends only with its ctx or Close.
func (h *Hub) Follow(session string, after uint64) *Subscription {
	s := h.Subscribe(session, after)
	s.follow = true
	return s
}

// reattach moves a following subscription whose journal was dropped to
// the session's current journal, keeping its cursor.
func (s *Subscription) reattach() {
	h, session := s.j.hub, s.j.session
	h.unsubscribe(s.j)
	n := h.Subscribe(session, s.after)
	s.j, s.pos, s.attached = n.j, n.pos, n.attached
}

// InMemory is how many sessions' journals the hub holds: what a
// long-running process keeps in memory for live streams.
func (h *Hub) InMemory() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.journals)
}

// Forget drops a session's journal from memory, waking its subscribers
// with ErrClosed once they have read everything. Nothing is lost: a later
// event gets a new journal numbered on from the Log, and a new
// subscription replays from the Log.
func (h *Hub) Forget(session string) {
	h.mu.Lock()
	j, ok := h.journals[session]
	delete(h.journals, session)
	h.mu.Unlock()
	if ok {
		j.Close()
	}
}

// Publish publishes ev. A kept event (see Type.Kept) is stamped with its
// session's next sequence number, stored in the Log, handed to every
// sink, then to subscribers, and Publish returns it stamped. A live-only
// event gets no number and goes only to live subscribers. The time is
// set if unset.
//
// An event the Log cannot store is not delivered anywhere and its error
// is returned. A sink error is returned after the remaining sinks and
// subscribers have seen the event, so a broken audit disk does not hide
// events from the live view.
func (h *Hub) Publish(ev Event) (Event, error) {
	j, err := h.prepare(&ev)
	if err != nil {
		return ev, err
	}
	if !ev.Type.Kept() {
		j.append(ev)
		return ev, nil
	}
	p := &pending{ev: ev, done: make(chan error, 1)}
	j.queue.Add(p, j.commit)
	err = <-p.done
	return p.ev, err
}

// PublishAsync publishes ev like Publish without waiting for it: the
// events a caller publishes to a session with PublishAsync keep their
// order (live-only ones included) relative to each other and to the
// session's Publish calls, and a kept event is still stored before it is
// delivered. done, if not nil, is called with the stamped event and
// Publish's error once ev has been stored and delivered; it runs on the
// goroutine committing the session's events and must not block.
func (h *Hub) PublishAsync(ev Event, done func(Event, error)) {
	j, err := h.prepare(&ev)
	if err != nil {
		if done != nil {
			done(ev, err)
		}
		return
	}
	j.queue.Go(&pending{ev: ev, then: done}, j.commit)
}

// prepare readies ev for publishing (UTC time, set if unset; no number
// yet; masked) and returns its session's journal.
func (h *Hub) prepare(ev *Event) (*Journal, error) {
	if ev.Session == "" {
		return nil, errors.New("publish: event has no session")
	}
	if ev.Time.IsZero() {
		ev.Time = h.now()
	}
	ev.Time = ev.Time.UTC()
	ev.Seq = 0
	h.redact(ev)
	return h.Journal(ev.Session), nil
}

// AsyncPublisher is a Publisher that can also publish without waiting
// (Hub.PublishAsync); the agent loop uses it when its publisher has it.
type AsyncPublisher interface {
	Publisher
	PublishAsync(ev Event, done func(Event, error))
}

var _ AsyncPublisher = (*Hub)(nil)

// pending is one event waiting to be numbered (when kept), stored and
// delivered; done or then hears how it went.
type pending struct {
	ev   Event
	done chan error
	then func(Event, error)
	// with, when set, stores the event with the others of its
	// PublishWith call, instead of the Log.
	with *withWrite
}

// withWrite is the write of one PublishWith call.
type withWrite struct {
	ctx   context.Context
	write func(ctx context.Context, evs []Event) error
}

// PublishWith publishes evs, kept events of one session in order, as
// Publish does, except that they are stored by write instead of the Log:
// write gets them numbered and stores them, all or none, in the same
// transaction as a change of its own, so that the events are recorded
// if and only if the change is (a run's end and its last events: no
// stream says a run ended that its record does not). write returns an
// error wrapping ErrSeqTaken when a number is taken; the events are then
// numbered again and write called again. Any other error is returned
// after that one attempt, nothing of evs is delivered anywhere, and the
// caller decides whether to try again. ctx bounds the write.
//
// On success it returns the events as stored, delivered to the sinks and
// subscribers like Publish's, with the sinks' errors, if any: evs is nil
// exactly when write did not store them.
func (h *Hub) PublishWith(ctx context.Context, evs []Event, write func(ctx context.Context, evs []Event) error) ([]Event, error) {
	if len(evs) == 0 {
		return nil, errors.New("publish: no events")
	}
	w := &withWrite{ctx: ctx, write: write}
	ps := make([]*pending, len(evs))
	var j *Journal
	for i := range evs {
		ev := evs[i]
		if !ev.Type.Kept() {
			return nil, fmt.Errorf("publish %s with a write: only kept events are stored", ev.Type)
		}
		if i > 0 && ev.Session != evs[0].Session {
			return nil, fmt.Errorf("publish with a write: events of two sessions, %s and %s", evs[0].Session, ev.Session)
		}
		var err error
		if j, err = h.prepare(&ev); err != nil {
			return nil, err
		}
		ps[i] = &pending{ev: ev, done: make(chan error, 1), with: w}
	}
	j.queue.AddAll(ps, j.commit)
	out := make([]Event, len(ps))
	var errs []error
	stored := true
	for i, p := range ps {
		err := <-p.done
		out[i] = p.ev
		if err != nil {
			errs = append(errs, err)
			stored = stored && p.ev.Seq != 0
		}
	}
	if !stored {
		return nil, errs[0]
	}
	return out, errors.Join(errs...)
}

// settle reports the outcome to the publisher.
func (p *pending) settle(err error) {
	if p.then != nil {
		p.then(p.ev, err)
		return
	}
	if p.done != nil {
		p.done <- err
	}
}

// commit numbers and stores a batch's kept events, hands them to the
// sinks (a BatchSink takes them in one call, see deliver), then appends
// each event to the journal, in order, and releases its publisher.
// Concurrent publishers to one session so share one store write and one
// sync of each sink (group commit) instead of taking turns. Live-only
// events in the batch (queued by PublishAsync) are not stored.
//
// The kept events are stored in one write per run of consecutive events
// with one Fence and one PublishWith call (segments): a fence is checked
// for the whole of one write, so a refused fence (a lease lost) refuses
// only its own events, and the ones after it are numbered on from the
// last number stored.
func (j *Journal) commit(batch []*pending) {
	var kept []*pending
	for _, p := range batch {
		if p.ev.Type.Kept() {
			kept = append(kept, p)
		}
	}
	errs, stored := j.storeSegments(kept)
	var sinkErrs [][]error
	if len(stored) > 0 {
		sinkErrs = j.hub.deliver(stored)
	}
	k, d := 0, 0
	for _, p := range batch {
		if !p.ev.Type.Kept() {
			j.append(p.ev)
			p.settle(nil)
			continue
		}
		if err := errs[k]; err != nil {
			k++
			p.settle(fmt.Errorf("publish %s to %s: %w", p.ev.Type, j.session, err))
			continue
		}
		k++
		errs := sinkErrs[d]
		d++
		j.append(p.ev)
		if err := errors.Join(errs...); err != nil {
			p.settle(fmt.Errorf("publish %s #%d to %s: %w", p.ev.Type, p.ev.Seq, j.session, err))
			continue
		}
		p.settle(nil)
	}
}

// storeSegments stores kept (a batch's kept events, in order), one
// segment at a time (see commit). It returns each event's store error
// and the events stored, numbered, in order; a stored event's pending
// holds it as stored, its fence cleared.
func (j *Journal) storeSegments(kept []*pending) (errs []error, stored []Event) {
	errs = make([]error, len(kept))
	for from := 0; from < len(kept); {
		to := from + 1
		for to < len(kept) && sameWrite(kept[from], kept[to]) {
			to++
		}
		evs := make([]Event, to-from)
		for i, p := range kept[from:to] {
			evs[i] = p.ev
		}
		if err := j.store(evs, kept[from].with); err != nil {
			for i := from; i < to; i++ {
				errs[i] = err
			}
		} else {
			for i, ev := range evs {
				ev.Fence = Fence{} // a write's condition, not part of the event
				kept[from+i].ev = ev
				stored = append(stored, ev)
			}
		}
		from = to
	}
	return errs, stored
}

// sameWrite reports whether b may be stored in the same write as a: the
// events of one PublishWith call, or events of the Log with one fence.
func sameWrite(a, b *pending) bool {
	return a.with == b.with && (a.with != nil || a.ev.Fence == b.ev.Fence)
}

// deliver hands stored events (one session's, in order) to every sink,
// sink after sink, a BatchSink all at once, and returns each event's
// errors. Every sink has seen the whole batch before any of it reaches
// a subscriber.
func (h *Hub) deliver(evs []Event) [][]error {
	errs := make([][]error, len(evs))
	for _, s := range h.sinks {
		if b, ok := s.(BatchSink); ok && len(evs) > 1 {
			for i, err := range b.DeliverBatch(evs) {
				if err != nil && i < len(errs) {
					errs[i] = append(errs[i], err)
				}
			}
			continue
		}
		for i, ev := range evs {
			if err := s.Deliver(ev); err != nil {
				errs[i] = append(errs[i], err)
			}
		}
	}
	return errs
}

// ErrClosed is returned by Subscription.Next once a closed journal has
// been read to its end.
var ErrClosed = errors.New("event stream closed")

// Journal is one session's recent events in memory and its subscribers'
// meeting point.
type Journal struct {
	hub     *Hub
	session string

	queue groupcommit.Queue[*pending] // kept events waiting to be stored

	subs      int  // open counted subscriptions (guarded by hub.mu)
	transient bool // opened for subscribers only (guarded by hub.mu)

	pub    sync.Mutex // held while numbering and storing
	loaded bool       // next is known (guarded by pub)
	next   uint64     // the next number to try (guarded by pub)

	mu       sync.Mutex
	entries  []Event // the retained window: kept and live events, in order
	base     uint64  // the position of entries[0]
	last     uint64  // the highest number appended here
	retain   int
	wake     chan struct{} // closed and replaced after every append (unlock)
	appended bool          // entries were appended under the lock held
	closed   bool
	held     map[Type]*heldText // streamed text not yet released (with a redactor)

	// Kept events stored by other processes (see Hub.Stored).
	own      uint64 // the highest number this process stored
	notified uint64 // the highest number another process said it stored
	floor    uint64 // with no kept entry: the lowest cursor attached at the end
	anchored bool   // a subscription attached at the end (floor is set)
}

func newJournal(h *Hub, session string, retain int) *Journal {
	if retain <= 0 {
		retain = DefaultRetain
	}
	return &Journal{hub: h, session: session, retain: retain, wake: make(chan struct{})}
}

// store numbers evs consecutively and writes them in one write: to the
// Log, or by with (PublishWith). When another process took a number
// first, it reloads the last number and numbers the events again after
// it (none of them was delivered yet), so numbers are never reused
// whoever publishes. A Log that fails (unreachable, full) is retried
// with a growing pause for up to OutageBound: the publisher waits,
// nothing is lost or reordered. A refused fence (ErrFenced) is final;
// so is any failure of with, whose caller decides.
func (j *Journal) store(evs []Event, with *withWrite) error {
	j.pub.Lock()
	defer j.pub.Unlock()
	if with != nil {
		return j.storeSeqRetried(with.ctx, evs, with.write)
	}
	if f := evs[0].Fence.Follows; f != 0 {
		return j.storeFollowing(evs, f)
	}
	ctx, cancel := outageContext(evs[0].Fence, j.hub.outage)
	defer cancel()
	start := time.Now()
	final := func(err error) bool {
		if errors.Is(err, ErrSeqTaken) || errors.Is(err, ErrLogClosed) || errors.Is(err, ErrFenced) {
			return true
		}
		// Past the bound, only an outage is waited out further (a leased
		// event with Until): a Log that keeps refusing the write for
		// another reason fails it, as before.
		return time.Since(start) > j.hub.outage && j.hub.transient != nil && !j.hub.transient(err)
	}
	return wait.Retry(ctx, 0, final, func(ctx context.Context) error {
		return j.storeSeqRetried(ctx, evs, j.hub.log.AppendEvents)
	})
}

// outageContext bounds the retries of a write with fence f: until
// f.Until closes for a leased event that has it, the outage bound
// otherwise.
func outageContext(f Fence, bound time.Duration) (context.Context, context.CancelFunc) {
	if !f.Leased() || f.Until == nil {
		return context.WithTimeout(context.Background(), bound)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-f.Until:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// storeSeqRetried stores evs with write, numbering them again after the
// last stored number as long as their numbers are taken (up to
// maxSeqAttempts times).
func (j *Journal) storeSeqRetried(ctx context.Context, evs []Event, write func(context.Context, []Event) error) error {
	for taken := 0; ; {
		err := j.storeOnce(ctx, evs, write)
		if !errors.Is(err, ErrSeqTaken) {
			return err
		}
		if taken++; taken >= maxSeqAttempts {
			return fmt.Errorf("store events: %w %d times in a row", ErrSeqTaken, maxSeqAttempts)
		}
	}
}

// storeOnce numbers evs after the last stored number and stores them
// with write. When the numbers were taken (ErrSeqTaken) the last number
// is reloaded on the next call.
func (j *Journal) storeOnce(ctx context.Context, evs []Event, write func(context.Context, []Event) error) error {
	if !j.loaded {
		actx, cancel := context.WithTimeout(ctx, logTimeout)
		last, err := j.hub.log.LastSeq(actx, j.session)
		cancel()
		if err != nil {
			return fmt.Errorf("read last sequence number: %w", err)
		}
		j.next, j.loaded = last+1, true
	}
	for i := range evs {
		evs[i].Seq = j.next + uint64(i)
	}
	actx, cancel := context.WithTimeout(ctx, logTimeout)
	err := write(actx, evs)
	cancel()
	switch {
	case err == nil:
		j.next += uint64(len(evs))
		j.storedOwn(j.next - 1)
		return nil
	case errors.Is(err, ErrSeqTaken):
		j.loaded = false
		return err
	}
	return fmt.Errorf("store events: %w", err)
}

// storeFollowing stores evs as the numbers right after follows, the
// session's last number as their publisher read it, or not at all: a
// compare-and-append (Fence.Follows). The last number is read again
// first, so that a publisher that read an older one never leaves a hole;
// a number taken meanwhile (another process appended first) is the
// compare failing. Either refusal wraps ErrFenced.
func (j *Journal) storeFollowing(evs []Event, follows uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	last, err := j.hub.log.LastSeq(ctx, j.session)
	if err != nil {
		return fmt.Errorf("read last sequence number: %w", err)
	}
	j.next, j.loaded = last+1, true
	if last != follows {
		return fmt.Errorf("store events after #%d: the stream is at #%d: %w", follows, last, ErrFenced)
	}
	err = j.storeOnce(ctx, evs, j.hub.log.AppendEvents)
	if errors.Is(err, ErrSeqTaken) {
		return fmt.Errorf("store events after #%d: another writer appended first: %w: %w", follows, ErrFenced, err)
	}
	return err
}

// append adds ev to the window and wakes subscribers. Appending to a
// closed journal keeps the event for subscribers still draining it. With
// a redactor, streamed text is held back and released masked (see
// holdDelta).
func (j *Journal) append(ev Event) {
	j.mu.Lock()
	defer j.unlock()
	if r := j.hub.redactor; r != nil {
		j.releaseHeld(r, ev.Type)
		if isDelta(ev.Type) {
			var ok bool
			if ev, ok = j.holdDelta(ev, r); !ok {
				return
			}
		}
	}
	j.emitLocked(ev)
}

// emitLocked appends an event published in this process and hands a
// live-only one, as subscribers see it, to the hub's relay if it has one;
// j.mu is held.
func (j *Journal) emitLocked(ev Event) {
	j.appendLocked(ev)
	if !ev.Type.Kept() {
		if relay := j.hub.relay.Load(); relay != nil {
			(*relay)(ev)
		}
	}
}

// appendLocked adds ev to the window; j.mu is held, and released with
// unlock, which wakes the subscribers.
func (j *Journal) appendLocked(ev Event) {
	j.entries = append(j.entries, ev)
	if ev.Seq > j.last {
		j.last = ev.Seq
	}
	if over := len(j.entries) - j.retain; over > 0 {
		// Copy down so the backing array does not grow without bound.
		n := copy(j.entries, j.entries[over:])
		clear(j.entries[n:])
		j.entries = j.entries[:n]
		j.base += uint64(over)
	}
	j.appended = true
}

// unlock releases j.mu and, when events were appended under it, wakes
// the subscribers: the wait channel is replaced under the lock and the
// old one closed after it, so that the readers it wakes (a thousand
// streams of a busy session) do not queue on the lock the publisher
// still holds.
func (j *Journal) unlock() {
	var old chan struct{}
	if j.appended && !j.closed {
		old, j.wake = j.wake, make(chan struct{})
	}
	j.appended = false
	j.mu.Unlock()
	if old != nil {
		close(old)
	}
}

// LastSeq is the session's highest stored sequence number, from the Log
// if this journal has not published yet.
func (j *Journal) LastSeq() (uint64, error) {
	j.mu.Lock()
	last := j.last
	j.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	stored, err := j.hub.log.LastSeq(ctx, j.session)
	if err != nil {
		return last, fmt.Errorf("last sequence number of %s: %w", j.session, err)
	}
	return max(last, stored), nil
}

// Close marks the journal finished: subscribers drain what is left and
// then get ErrClosed.
func (j *Journal) Close() {
	j.mu.Lock()
	defer j.unlock()
	if r := j.hub.redactor; r != nil && !j.closed {
		j.releaseHeld(r, "")
	}
	if !j.closed {
		j.closed = true
		close(j.wake)
	}
}

// Subscribe returns a subscription that yields the kept events after
// sequence number after (replayed from the Log when they are no longer
// in memory), then live ones, including live-only events from the moment
// it has caught up: at once when nothing after after is stored.
func (j *Journal) Subscribe(after uint64) *Subscription {
	s := &Subscription{j: j, after: after}
	ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
	defer cancel()
	// On an error the subscription starts by reading the Log, whose
	// error Next then reports.
	if last, err := j.hub.log.LastSeq(ctx, j.session); err == nil && after >= last {
		s.pos, s.attached = j.attach(after)
	}
	return s
}

// attach finds where a subscription that has read every stored event up
// to after joins the window: at the first kept event after it if that is
// after+1, at the end if none is retained. It reports false when a later
// event is retained but after+1 is not, or when another process reported
// a later event this window does not have yet (see Hub.Stored): read the
// Log again.
func (j *Journal) attach(after uint64) (uint64, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, ev := range j.entries {
		if ev.Seq > after {
			return j.base + uint64(i), ev.Seq == after+1
		}
	}
	if j.notified > after {
		// Another process stored more, not caught up here yet.
		return 0, false
	}
	j.anchorLocked(after)
	return j.base + uint64(len(j.entries)), true
}

// window appends the retained entries from position pos on to dst and
// returns them, whether pos was evicted, a channel closed on the next
// change, and whether the journal is closed.
func (j *Journal) window(dst []Event, pos uint64) (evs []Event, evicted bool, wake <-chan struct{}, closed bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if pos < j.base {
		return dst, true, j.wake, j.closed
	}
	if i := int(pos - j.base); i < len(j.entries) {
		dst = append(dst, j.entries[i:]...)
	}
	return dst, false, j.wake, j.closed
}
