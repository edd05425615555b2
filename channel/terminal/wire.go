package terminal

import (
	"encoding/json"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
)

// FromClient is a daemon's subagent (the client's wire type) as the
// core's view, ava.Subagent, so that a run read from a daemon renders
// exactly like one of this process: the one conversion, used by `ava
// ps`, `ava status` and `ava chat` on a daemon. The figures are the
// daemon's, as it sent them; a result that is not a result is left out.
func FromClient(s client.Subagent) ava.Subagent {
	out := ava.Subagent{ID: s.ID, SessionKey: s.SessionKey, Role: s.Role, Task: s.Task, Model: s.Model, Mode: s.Mode,
		Parent: s.Parent, Status: lifecycle.Status(s.Status), QueuePosition: s.QueuePosition, Stalled: s.Stalled,
		WaitingForUser: s.WaitingForUser,
		Figures: ava.Figures{Iterations: s.Iteration, Tokens: s.Tokens, CostCents: s.CostCents,
			Elapsed: time.Duration(s.ElapsedMs) * time.Millisecond},
		Activity: s.Activity, LastTool: s.LastTool, CreatedAt: s.CreatedAt, StartedAt: s.StartedAt, EndedAt: s.EndedAt,
		Error: s.Error, Attempts: s.Attempts, Live: s.Live}
	if len(s.Result) > 0 {
		var res ava.Result
		if json.Unmarshal(s.Result, &res) == nil {
			out.Result = &res
		}
	}
	return out
}
