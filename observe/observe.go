// Package observe is Ava's typed extension point: any number of
// observers of what the runtime does — runs started and ended, turns
// ended, spawn proposals made and decided, questions asked and answered.
//
// An Observer is a struct of optional funcs, one per notice (like
// net/http/httptrace.ClientTrace); add it to the instance's Set. The
// runtime calls Notify* after the store write that makes the notice
// true.
//
// Delivery: in process, at most once, in order per observer. Notify*
// never blocks: each observer has a bounded queue of its own (QueueSize,
// default 4096) served by its own goroutine, so a slow observer slows
// neither the runtime nor the other observers. When an observer's queue
// is full the new notice is dropped for that observer and counted
// (Dropped); a warning is logged once per burst of drops. A panicking
// observer is recovered and logged; its queue goes on. Close drains the
// queues until its context ends.
//
// Notices are not durable: one sent while nothing observes, dropped, or
// still queued when the process dies is lost. Durable hooks (stored,
// retried, once per event in a cluster) are built on the store, not on
// this package. In a cluster each notice fires in the process that made
// the write: a run's end on the worker that ran it.
package observe

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// DefaultQueueSize bounds each observer's queue.
const DefaultQueueSize = 4096

// Observer is one observer: set the funcs of the notices it wants. Each
// is called on the observer's own goroutine, one notice at a time, with
// a context that ends when Set.Close gives up draining.
type Observer struct {
	RunStarted       func(context.Context, RunStarted)
	RunEnded         func(context.Context, RunEnded)
	TurnEnded        func(context.Context, TurnEnded)
	ProposalMade     func(context.Context, ProposalMade)
	ProposalDecided  func(context.Context, ProposalDecided)
	QuestionAsked    func(context.Context, QuestionAsked)
	QuestionAnswered func(context.Context, QuestionAnswered)
}

// Options configure a Set.
type Options struct {
	// QueueSize bounds each observer's queue (default DefaultQueueSize).
	QueueSize int
	Logger    *slog.Logger
}

// Set holds any number of observers. A nil *Set is valid and notifies no
// one. Its methods are safe for concurrent use.
type Set struct {
	size int
	log  *slog.Logger
	// ctx is the observers' context; abort ends it when Close gives up.
	ctx     context.Context
	abort   context.CancelFunc
	dropped atomic.Uint64

	mu     sync.Mutex
	subs   []*sub
	closed bool
	wg     sync.WaitGroup
}

// New returns an empty Set.
func New(opt Options) *Set {
	if opt.QueueSize <= 0 {
		opt.QueueSize = DefaultQueueSize
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	s := &Set{size: opt.QueueSize, log: opt.Logger.With("component", "observe")}
	s.ctx, s.abort = context.WithCancel(context.Background())
	return s
}

// Add adds o and returns the func that removes it: no notice is queued
// for it after that, and what is queued still reaches it. Adding to a
// closed Set does nothing.
func (s *Set) Add(o Observer) (remove func()) {
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return func() {}
	}
	b := &sub{o: o, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	s.subs = append(s.subs, b)
	s.wg.Go(func() { s.serve(b) })
	var once sync.Once
	return func() { once.Do(func() { s.remove(b) }) }
}

// remove takes b out of the set and lets its goroutine end once its
// queue is empty.
func (s *Set) remove(b *sub) {
	s.mu.Lock()
	for i, x := range s.subs {
		if x == b {
			s.subs = append(s.subs[:i:i], s.subs[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	b.stop()
}

// Dropped is how many notices were dropped because an observer's queue
// was full, over all observers.
func (s *Set) Dropped() uint64 {
	if s == nil {
		return 0
	}
	return s.dropped.Load()
}

// Close stops taking notices and observers, lets each observer work
// through its queue until ctx ends (then the observers' context is
// cancelled and what is still queued dropped), and waits for every
// observer's goroutine. An observer that ignores its context delays
// Close until it returns.
func (s *Set) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for _, b := range subs {
		b.stop()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.abort()
		return nil
	case <-ctx.Done():
	}
	s.abort()
	<-done
	return fmt.Errorf("close observers: queued notices dropped: %w", context.Cause(ctx))
}

// deliver queues n for every observer that has a func for it.
func deliver[T any](s *Set, pick func(*Observer) func(context.Context, T), n T) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, b := range s.subs {
		if f := pick(&b.o); f != nil {
			s.enqueue(b, func(ctx context.Context) { f(ctx, n) })
		}
	}
}

// NotifyRunStarted sends n to every observer (see RunStarted).
func (s *Set) NotifyRunStarted(n RunStarted) {
	deliver(s, func(o *Observer) func(context.Context, RunStarted) { return o.RunStarted }, n)
}

// NotifyRunEnded sends n to every observer (see RunEnded).
func (s *Set) NotifyRunEnded(n RunEnded) {
	deliver(s, func(o *Observer) func(context.Context, RunEnded) { return o.RunEnded }, n)
}

// NotifyTurnEnded sends n to every observer (see TurnEnded).
func (s *Set) NotifyTurnEnded(n TurnEnded) {
	deliver(s, func(o *Observer) func(context.Context, TurnEnded) { return o.TurnEnded }, n)
}

// NotifyProposalMade sends n to every observer (see ProposalMade).
func (s *Set) NotifyProposalMade(n ProposalMade) {
	deliver(s, func(o *Observer) func(context.Context, ProposalMade) { return o.ProposalMade }, n)
}

// NotifyProposalDecided sends n to every observer (see ProposalDecided).
func (s *Set) NotifyProposalDecided(n ProposalDecided) {
	deliver(s, func(o *Observer) func(context.Context, ProposalDecided) { return o.ProposalDecided }, n)
}

// NotifyQuestionAsked sends n to every observer (see QuestionAsked).
func (s *Set) NotifyQuestionAsked(n QuestionAsked) {
	deliver(s, func(o *Observer) func(context.Context, QuestionAsked) { return o.QuestionAsked }, n)
}

// NotifyQuestionAnswered sends n to every observer (see QuestionAnswered).
func (s *Set) NotifyQuestionAnswered(n QuestionAnswered) {
	deliver(s, func(o *Observer) func(context.Context, QuestionAnswered) { return o.QuestionAnswered }, n)
}

// sub is one observer with its queue.
type sub struct {
	o    Observer
	wake chan struct{} // a notice was queued (capacity 1)
	quit chan struct{} // closed by stop: end once the queue is empty
	once sync.Once

	mu       sync.Mutex
	queue    []func(context.Context)
	dropping bool   // a burst of drops is on (its first was logged)
	burst    uint64 // notices dropped in the current burst
}

func (b *sub) stop() { b.once.Do(func() { close(b.quit) }) }

// enqueue puts call in b's queue, or drops it when the queue is full.
func (s *Set) enqueue(b *sub, call func(context.Context)) {
	b.mu.Lock()
	if len(b.queue) >= s.size {
		b.burst++
		first := !b.dropping
		b.dropping = true
		b.mu.Unlock()
		s.dropped.Add(1)
		if first {
			s.log.Warn("an observer is too slow: its queue is full, notices for it are dropped until it catches up", "queue", s.size)
		}
		return
	}
	if b.dropping {
		s.log.Info("a slow observer caught up", "dropped", b.burst)
		b.dropping, b.burst = false, 0
	}
	b.queue = append(b.queue, call)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// serve calls b's queued notices in order, one at a time (a notice
// being called still counts against the queue's bound), until b is
// stopped and its queue is empty, or the Set gives up draining.
func (s *Set) serve(b *sub) {
	for {
		b.mu.Lock()
		var call func(context.Context)
		if len(b.queue) > 0 {
			call = b.queue[0]
		}
		b.mu.Unlock()
		if call != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.call(call)
			b.mu.Lock()
			b.queue[0] = nil
			b.queue = b.queue[1:]
			b.mu.Unlock()
			continue
		}
		select {
		case <-b.wake:
		case <-b.quit:
			b.mu.Lock()
			empty := len(b.queue) == 0
			b.mu.Unlock()
			if empty {
				return
			}
		case <-s.ctx.Done():
			return
		}
	}
}

// call runs one notice, recovering a panic.
func (s *Set) call(f func(context.Context)) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("an observer panicked; it goes on with its next notice", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f(s.ctx)
}
