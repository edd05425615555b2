package app

import (
	"context"
	"fmt"

	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/store"
)

// interruptedSweep is how many of the most recently active main sessions
// a starting daemon looks at for a turn that never ended: a turn cut
// short by a crash stored its person's message first, so its session is
// among the last updated ones.
const interruptedSweep = 100

// EndInterruptedTurns ends, as interrupted, the orchestrator turns that
// started and never ended because their process is gone (kill -9, a
// crash), in the most recently active main sessions: their streams get
// their SessionEnd and their histories a note, at once rather than at the
// session's next turn (which does it too). Call it before the instance
// takes messages: no turn of this process may run yet. It returns how
// many turns it ended.
func (in *Instance) EndInterruptedTurns(ctx context.Context) (int, error) {
	if in.Sessions == nil {
		return 0, nil
	}
	sessions, err := in.Store.ListSessions(ctx, store.SessionFilter{Main: true, Limit: interruptedSweep})
	if err != nil {
		return 0, fmt.Errorf("list sessions for interrupted turns: %w", err)
	}
	o := orchestrator.New(orchestrator.Config{Hub: in.Hub, History: in.History(), Events: in.Store, Owner: in.turnOwner(),
		Logger: in.Log})
	n := 0
	for _, s := range sessions {
		ended, err := o.EndInterrupted(ctx, s.Key)
		if err != nil {
			return n, err
		}
		if ended {
			n++
		}
	}
	return n, nil
}
