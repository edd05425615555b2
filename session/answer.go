package session

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// answerProposal answers t from the session's pending proposals; false
// when there are none and t is an ordinary turn.
func (s *Service) answerProposal(ctx context.Context, t *Turn) bool {
	if s.cfg.Subagents == nil {
		return false
	}
	pending, err := s.cfg.Subagents.Proposals(ctx, t.Session)
	if err != nil || len(pending) == 0 {
		if err != nil {
			s.log.Error("list pending proposals", "session", t.Session, "err", err)
		}
		return false
	}
	s.publishText(t, event.UserMessage, t.message)
	reply := s.decideFromText(ctx, pending, t.message)
	s.publishText(t, event.AssistantMessage, reply)
	t.res = Result{Status: lifecycle.Success, Text: reply, Session: t.Session}
	return true
}

// decideFromText applies the message to the proposals it answers and
// returns what to tell the person.
func (s *Service) decideFromText(ctx context.Context, pending []subagent.Proposal, message string) string {
	targets, text := pickProposal(pending, message)
	if len(targets) == 0 {
		var ids []string
		for _, p := range pending {
			ids = append(ids, fmt.Sprintf("%s (%s: %s)", p.ID, p.Role, firstWords(p.Task)))
		}
		return fmt.Sprintf("%d spawns await your answer: %s. Answer \"yes\" or \"no\" for all, or name one, e.g. \"yes to %s\".",
			len(pending), strings.Join(ids, ", "), pending[0].ID)
	}
	a := confirm.Parse(text)
	if a.Decision == confirm.Unclear {
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
	if d.Decision == store.SpawnRejected {
		return fmt.Sprintf("OK, not spawning %s (%s).", target.Role, target.ID)
	}
	with := ""
	if d.Change != "" {
		with = " with " + d.Change
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
