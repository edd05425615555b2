package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
)

// A message to a main session that has spawn proposals awaiting the
// person is their answer (seed 000 section 2.1: "Proceed? [Yes/No]" —
// "Yes"), not a new request: it is parsed (confirm.Parse) and decides
// proposals without a model turn. A message naming a pending ID
// ("P-3f9a1c yes", "yes to P-3f9a1c", "no to P-3f9a1c") answers that
// one. A plain yes or no answers every pending proposal of the session:
// they are all the last turn's, since while any is pending a message is
// an answer and starts no turn (issue 31: "yes" after a turn proposed
// two spawns starts both). A change ("use haiku") or an unclear answer
// with several pending asks which one. An answer that is not clearly a
// yes, a no or a change is asked again, never taken as yes. The person's
// answer and the reply are published as UserMessage and AssistantMessage
// events; the orchestrator learns the outcome from the [Subagent] note
// the decision leaves in its history.

var pendingIDPattern = lazyre.New(`(?i)\bP-[0-9a-f]{6}\b`)

// The same holds while a turn runs and waits for the person's answer
// to a process proposal (a long run_bash or python_exec call of its own,
// subagent.KindProcess): a message to the session then is that answer
// (answerWaiting), decided at once beside the waiting turn, not merged
// into it, queued behind it or refused as busy; the turn's tool call
// runs (or not) and the turn answers with its result. Only an explicit
// SendOptions.Supersede passes by: it cancels the turn, which withdraws
// the proposal.

// answerProposal answers t from the session's pending proposals; false
// when there are none and t is an ordinary turn.
func (s *Service) answerProposal(ctx context.Context, t *Turn) bool {
	pending := s.pending(ctx, t.Session)
	if len(pending) == 0 {
		return false
	}
	s.answerWith(ctx, t, pending)
	return true
}

// pending lists the session's pending proposals (none without a
// subagent manager; an error is logged and lists none).
func (s *Service) pending(ctx context.Context, key string) []subagent.Proposal {
	if s.cfg.Subagents == nil {
		return nil
	}
	pending, err := s.cfg.Subagents.Proposals(ctx, key)
	if err != nil {
		s.log.Error("list pending proposals", "session", key, "err", err)
		return nil
	}
	return pending
}

// answerWaiting returns the turn that answers the session's pending
// proposals with message when a turn of the session runs here and one
// of them is a process proposal (its turn waits for it); nil otherwise,
// and the message goes the way of any message to a busy session.
func (s *Service) answerWaiting(ctx context.Context, key, message string, opt SendOptions) *Turn {
	if opt.Supersede || !s.turnBusy(key) {
		return nil
	}
	pending := s.pending(ctx, key)
	if !slices.ContainsFunc(pending, func(p subagent.Proposal) bool { return p.Kind == subagent.KindProcess }) {
		return nil
	}
	t := &Turn{Session: key, message: message, opt: opt, done: make(chan struct{}), span: trace.SpanContextFromContext(ctx),
		redactor: s.cfg.Redactor, started: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil // Send refuses it with ErrClosed
	}
	s.wg.Go(func() {
		defer close(t.done)
		s.answerWith(s.ctx, t, pending)
	})
	return t
}

// answerWith answers t's message from the pending proposals: the
// person's words and the reply go to the session's stream, the reply is
// the turn's result.
func (s *Service) answerWith(ctx context.Context, t *Turn, pending []subagent.Proposal) {
	s.publishText(t, event.UserMessage, t.message)
	reply := s.decideFromText(ctx, pending, t.message)
	s.publishText(t, event.AssistantMessage, reply)
	t.res = Result{Status: lifecycle.Success, Text: reply, Session: t.Session}
}

// decideFromText applies the message to the proposals it answers and
// returns what to tell the person.
func (s *Service) decideFromText(ctx context.Context, pending []subagent.Proposal, message string) string {
	targets, text := pickProposal(pending, message)
	if len(targets) == 0 {
		var ids []string
		noun := "spawns"
		for _, p := range pending {
			ids = append(ids, fmt.Sprintf("%s (%s: %s)", p.ID, p.Role, firstWords(p.Task)))
			if p.Kind == subagent.KindProcess {
				noun = "proposals"
			}
		}
		return fmt.Sprintf("%d %s await your answer: %s. Answer \"yes\" or \"no\" for all, or name one, e.g. \"yes to %s\".",
			len(pending), noun, strings.Join(ids, ", "), pending[0].ID)
	}
	a := confirm.Parse(text)
	if a.Decision == confirm.Unclear {
		if targets[0].Kind == subagent.KindProcess {
			return confirm.AskAgainProcess + "\n\n" + targets[0].Text
		}
		return confirm.AskAgain + "\n\n" + targets[0].Text
	}
	replies := make([]string, 0, len(targets))
	for i := range targets {
		replies = append(replies, s.decideOne(ctx, &targets[i], a))
	}
	return strings.Join(replies, "\n")
}

// decideOne applies a parsed answer to one proposal and returns what to
// tell the person about it.
func (s *Service) decideOne(ctx context.Context, target *subagent.Proposal, a confirm.Answer) string {
	d, err := s.cfg.Subagents.Decide(ctx, target.ID, a.Decision, a.Change)
	if err != nil {
		return fmt.Sprintf("Could not apply your answer to %s: %v", target.ID, err)
	}
	with := ""
	if d.Change != "" {
		with = " with " + d.Change
	}
	if target.Kind == subagent.KindProcess {
		if d.Decision == store.SpawnRejected {
			return fmt.Sprintf("OK, not running the %s call (%s).", target.Role, target.ID)
		}
		return fmt.Sprintf("▶ Running the %s call (%s)%s.", target.Role, target.ID, with)
	}
	if d.Decision == store.SpawnRejected {
		return fmt.Sprintf("OK, not spawning %s (%s).", target.Role, target.ID)
	}
	return fmt.Sprintf("🚀 Spawning %s subagent%s (%s)%s...", target.Role, plural(len(d.SubagentIDs)), strings.Join(d.SubagentIDs, ", "), with)
}

// pickProposal returns the proposals the message answers and the answer
// without the ID: the one it names (none when that one is not pending);
// else the only one pending; else,
// for a plain yes or no, all pending (the last turn's); else none, and
// the person is asked which.
func pickProposal(pending []subagent.Proposal, message string) ([]subagent.Proposal, string) {
	if id := pendingIDPattern().FindString(message); id != "" {
		rest := strings.TrimSpace(pendingIDPattern().ReplaceAllString(message, " "))
		for i := range pending {
			if strings.EqualFold(pending[i].ID, id) {
				return pending[i : i+1], rest
			}
		}
		return nil, rest // a named ID that is not pending answers none
	}
	if len(pending) == 1 {
		return pending, message
	}
	if d := confirm.Parse(message).Decision; d == confirm.Confirmed || d == confirm.Rejected {
		return pending, message
	}
	return nil, message
}

func plural(n int) string {
	if n > 1 {
		return "s"
	}
	return ""
}

func firstWords(s string) string {
	if f := strings.Fields(s); len(f) > 8 {
		return strings.Join(f[:8], " ") + "…"
	}
	return s
}

// publishText publishes a text event of t's session as the orchestrator.
func (s *Service) publishText(t *Turn, typ event.Type, text string) {
	ev := event.New(typ, event.TextContent{Text: text})
	ev.Session, ev.Agent, ev.User, ev.Time = t.Session, event.OrchestratorID, t.opt.User, time.Now()
	if _, err := s.cfg.Hub.Publish(ev); err != nil {
		s.log.Error("publish answer", "session", t.Session, "type", typ, "err", err)
	}
}
