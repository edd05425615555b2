package subagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/wait"
	"github.com/avaagent/ava/store"
)

// errStoreOut is the error of a run's store write given up on because
// the store did not answer before the manager closed. It wraps no
// context error, so a run it ends is never recorded as timed out
// (agent.StatusOf): an outage is not the run's timeout.
var errStoreOut = errors.New("the store did not answer before this process shut down")

// ride calls fn, a store read or write of a run this process holds,
// until it succeeds or is refused for good (another owner, a status the
// write does not expect, a record not found): a database that restarts
// or pauses, however long, pauses the run instead of ending it (issue 39
// item 5; its lease is kept through the outage, see package instance).
// Each call gets finalWriteTimeout; the retries end finalWriteTimeout
// after the manager closes, with an error wrapping errStoreOut and the
// store's last error (as text: not a context error).
func (m *Manager) ride(fn func(ctx context.Context) error) error {
	ctx, cancel := m.durableContext()
	defer cancel()
	start := time.Now()
	final := func(err error) bool {
		// An outage is waited out however long; any other failure (a
		// bug, a record the store keeps refusing) for the old bound
		// only, so that it ends the run rather than hold it for good.
		return refused(err) || (!store.Outage(err) && time.Since(start) > event.OutageBound)
	}
	err := wait.Retry(ctx, 0, final, func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, finalWriteTimeout)
		defer cancel()
		return fn(actx)
	})
	if err != nil && ctx.Err() != nil && !refused(err) {
		return fmt.Errorf("%w (%v)", errStoreOut, err)
	}
	return err
}
