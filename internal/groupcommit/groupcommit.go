// Package groupcommit lets concurrent callers share one expensive commit
// (a transaction, a write and an fsync). Each caller adds its item; the
// caller that finds no commit under way becomes the leader and commits
// what is queued, batch after batch, in the order it was added, until the
// queue is empty. The others return at once and wait for their item's
// outcome however their items carry it (a channel in each item, usually).
package groupcommit

import "sync"

// Queue is one group commit's queue. The zero value is ready to use.
type Queue[T any] struct {
	mu      sync.Mutex
	items   []T
	leading bool
}

// Add queues item and, if no commit is under way, leads: it calls commit
// with every queued batch until none is left. commit must settle each
// item of its batch; it is never called for two batches at once.
func (q *Queue[T]) Add(item T, commit func(batch []T)) {
	q.mu.Lock()
	q.items = append(q.items, item)
	if q.leading {
		q.mu.Unlock()
		return
	}
	q.leading = true
	q.mu.Unlock()
	for {
		q.mu.Lock()
		batch := q.items
		q.items = nil
		if len(batch) == 0 {
			q.leading = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		commit(batch)
	}
}
