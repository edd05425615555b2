// Package groupcommit lets concurrent callers share one expensive commit
// (a transaction, a write and an fsync). Each caller adds its item; the
// caller that finds no commit under way becomes the leader and commits
// what is queued, in the order it was added; once the batch holding its
// own item is committed it hands the lead, if more was queued meanwhile,
// to a goroutine of its own, which commits batch after batch until the
// queue is empty. The others return at once and wait for their item's
// outcome however their items carry it (a channel in each item, usually).
package groupcommit

import "sync"

// Queue is one group commit's queue. The zero value is ready to use.
type Queue[T any] struct {
	mu      sync.Mutex
	items   []T
	leading bool
	idle    *sync.Cond // broadcast when a lead ends; made on first use
}

// Wait returns once no commit is under way (none is queued): a store
// closing waits for the commits it has let in.
func (q *Queue[T]) Wait() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.leading {
		q.cond().Wait()
	}
}

// cond is idle, made on first use; q.mu must be held.
func (q *Queue[T]) cond() *sync.Cond {
	if q.idle == nil {
		q.idle = sync.NewCond(&q.mu)
	}
	return q.idle
}

// endLead ends the lead; q.mu must be held.
func (q *Queue[T]) endLead() {
	q.leading = false
	q.cond().Broadcast()
}

// Add queues item and, if no commit is under way, leads: it calls commit
// with the queued batch, which holds item, and returns once that is
// committed; batches queued meanwhile are committed by a new goroutine,
// so that a caller never waits for later callers' commits (under steady
// load the queue may never empty). commit must settle each item of its
// batch; it is never called for two batches at once.
func (q *Queue[T]) Add(item T, commit func(batch []T)) {
	if !q.queue(item) {
		return
	}
	batch, _ := q.next()
	commit(batch)
	if q.more() {
		go q.lead(commit)
	}
}

// AddAll is Add for several items queued together: no other caller's
// item comes between them, and they are committed in one batch (a batch
// is all that was queued when its commit began). Like Add, when it does
// not lead it returns at once, and its caller waits for the items'
// outcome however they carry it.
func (q *Queue[T]) AddAll(items []T, commit func(batch []T)) {
	if len(items) == 0 {
		return
	}
	if !q.queue(items...) {
		return
	}
	batch, _ := q.next()
	commit(batch)
	if q.more() {
		go q.lead(commit)
	}
}

// Go queues item like Add but never commits on the caller's goroutine:
// if no commit is under way, a new goroutine leads. Items are committed
// in the order of their Add and Go calls.
func (q *Queue[T]) Go(item T, commit func(batch []T)) {
	if q.queue(item) {
		go q.lead(commit)
	}
}

// queue appends items and reports whether the caller must lead.
func (q *Queue[T]) queue(items ...T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, items...)
	if q.leading {
		return false
	}
	q.leading = true
	return true
}

// lead commits batches until the queue is empty.
func (q *Queue[T]) lead(commit func(batch []T)) {
	for {
		batch, ok := q.next()
		if !ok {
			return
		}
		commit(batch)
	}
}

// next takes the queued batch; when none is left it ends the lead and
// reports false.
func (q *Queue[T]) next() ([]T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.items
	q.items = nil
	if len(batch) == 0 {
		q.endLead()
		return nil, false
	}
	return batch, true
}

// more reports whether items are queued, keeping the lead for whoever
// commits them; when none are, it ends the lead.
func (q *Queue[T]) more() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		q.endLead()
		return false
	}
	return true
}
