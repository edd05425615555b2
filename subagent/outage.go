package subagent

import (
	"context"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/wait"
)

// outageBound is how long ride retries a store that cannot answer.
func (m *Manager) outageBound() time.Duration {
	if m.opt.OutageBound > 0 {
		return m.opt.OutageBound
	}
	return event.OutageBound
}

// ride calls fn, a store read or write of a run this process holds,
// until it succeeds, is refused for good (refused: another owner, a
// status the write does not expect, a record not found), or the outage
// bound has passed; each call gets finalWriteTimeout. A database that
// restarts for a second so delays the run instead of ending it. The
// retries end finalWriteTimeout after the manager closes.
func (m *Manager) ride(fn func(ctx context.Context) error) error {
	return m.retryStore(m.outageBound(), fn)
}

// retryStore calls fn until it succeeds, is refused for good, or bound
// has passed (0: no bound, until the store takes it); each call gets
// finalWriteTimeout, and the retries end finalWriteTimeout after the
// manager closes.
func (m *Manager) retryStore(bound time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := m.durableContext()
	defer cancel()
	if bound > 0 {
		var cancelBound context.CancelFunc
		ctx, cancelBound = context.WithTimeout(ctx, bound)
		defer cancelBound()
	}
	return wait.Retry(ctx, 0, refused, func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, finalWriteTimeout)
		defer cancel()
		return fn(actx)
	})
}
