package ava

import "github.com/avaagent/ava/observe"

// Observer is a set of callbacks, one per notice, each optional: what a
// program runs when runs start and end, turns end, proposals are made
// and decided, and questions are asked and answered (package observe).
type Observer = observe.Observer

// The notices an Observer receives.
type (
	RunStarted       = observe.RunStarted
	RunEnded         = observe.RunEnded
	TurnEnded        = observe.TurnEnded
	ProposalMade     = observe.ProposalMade
	ProposalDecided  = observe.ProposalDecided
	QuestionAsked    = observe.QuestionAsked
	QuestionAnswered = observe.QuestionAnswered
)

// Observe adds an observer until remove is called or the runtime
// closes. Any number may observe. Each has a queue of its own served by a
// goroutine of its own, so a slow or failing observer never slows a run,
// the publishing path or another observer; it receives its notices in
// order, in this process, at most once (a full queue drops and counts;
// see docs/observers.md). Close drains the queues before the store
// closes. Durable delivery to commands and webhooks is built on this
// (lifecycle hooks).
func (r *Runtime) Observe(o Observer) (remove func()) { return r.in.Observers.Add(o) }
