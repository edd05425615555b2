package mcpserver

import (
	"errors"
	"fmt"

	"github.com/avaagent/ava"
)

// hints say what to do next after a failure of each kind (ava.KindOf,
// the classification every surface answers from).
var hints = map[ava.Kind]string{
	ava.Invalid:     "correct the arguments and call again",
	ava.NotFound:    "list_subagents shows this session's subagents (all=true includes the finished ones)",
	ava.Conflict:    "it was decided or expired already: spawn again for a new proposal",
	ava.Busy:        "it is busy: wait for it to end, send with queue=true, or stop it where it runs (ava stop talks to the daemon)",
	ava.Unclear:     "answer yes, no, or a change such as \"use haiku\", \"max $1\", \"only 2 minutes\"",
	ava.Limit:       "every subagent slot is taken: wait for one to end (list_subagents) or cancel one (cancel_subagent)",
	ava.Budget:      "the session's budget is spent: nothing more can be spawned in it",
	ava.Forbidden:   "only the operator may do this (in config.yaml or on the command line), not an MCP client",
	ava.Full:        "the data root's disk is full: nothing was recorded; free space and call again",
	ava.Unavailable: "the server is not taking work now (shutting down or read-only): call again once it is back",
}

// callError is a failed tool call as the client reads it: what failed,
// why (masked: it may quote a subagent's text), and what to do next.
// The SDK answers it as a tool result with isError set (the MCP rule
// for a tool's failure); the cause stays testable with errors.Is.
type callError struct {
	msg string
	err error
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Unwrap() error { return e.err }

// toolError is err as tool op's failure (nil stays nil).
func (s *Server) toolError(op string, err error) error {
	if err == nil {
		return nil
	}
	var done *callError
	if errors.As(err, &done) {
		return err
	}
	msg := fmt.Sprintf("%s: %v", op, err)
	if hint := hints[ava.KindOf(err)]; hint != "" {
		msg += " (" + hint + ")"
	}
	return &callError{msg: s.rt.Redactor().String(msg), err: err}
}
