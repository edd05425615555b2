package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
)

// addNotes adds to the request about to be made what arrived for the
// model since the last one: the messages steered into the run (each
// published as the person's UserMessage at this point), and once a limit
// is nearly used up, the note to wrap up. They go in a user message of
// their own after the last one (the input, or the tool results), so that
// checkpoints store it like any other. It returns the steered messages
// and whether it added a message (see dropNotes).
func (r *run) addNotes() (steers []string, added bool) {
	var notes []string
	if in := r.a.cfg.Inbox; in != nil {
		steers = in()
		for _, msg := range steers {
			r.a.emit(event.New(event.UserMessage, event.TextContent{Text: msg}))
			notes = append(notes, "[A message from the person while you work]\n"+msg)
		}
	}
	if note := r.wrapUpNote(); note != "" {
		r.a.emit(event.New(event.UserMessage, event.TextContent{Text: note}))
		notes = append(notes, note)
	}
	if len(notes) == 0 {
		return steers, false
	}
	r.msgs = append(r.msgs, llm.UserText(strings.Join(notes, "\n\n")))
	return steers, true
}

// dropNotes undoes addNotes after a model call that failed: the message
// leaves the conversation and the steers go back (Config.Unread), so
// that the run's owner delivers them later (a follow-up): the model
// never read them.
func (r *run) dropNotes(steers []string, added bool) {
	if added {
		r.msgs = r.msgs[:len(r.msgs)-1]
	}
	if len(steers) > 0 && r.a.cfg.Unread != nil {
		r.a.cfg.Unread(steers)
	}
}

// wrapUpNote is the note that tells the model to finish, the first time
// any limit's share reaches Config.WrapUpAt; "" otherwise.
func (r *run) wrapUpNote() string {
	at := r.a.cfg.WrapUpAt
	if at <= 0 || r.warned {
		return ""
	}
	lim := r.a.cfg.Limits
	var used []string
	share := func(name string, spent, limit float64, format string) {
		if limit > 0 && spent/limit >= at {
			used = append(used, fmt.Sprintf("%.0f%% of its %s ("+format+")", 100*spent/limit, name, spent, limit))
		}
	}
	share("time", r.elapsed().Seconds(), lim.Timeout.Seconds(), "%.0fs of %.0fs")
	share("cost cap", r.cost, lim.MaxCostCents, "%.2f¢ of %.2f¢")
	share("token cap", float64(r.usage.Total()), float64(lim.MaxTokens), "%.0f of %.0f tokens")
	share("model calls", float64(r.iter+1), float64(lim.MaxIterations), "call %.0f of %.0f")
	if len(used) == 0 {
		return ""
	}
	r.warned = true
	r.a.log.Debug("told to wrap up", "used", used)
	return "[Ava] This run has used " + strings.Join(used, ", ") +
		". Finish now with what you have: no more exploring; give your final answer in this reply or the next, " +
		"saying what is done and what is left."
}

// checkAnswer vets a final answer: empty, or refused by
// Config.CheckAnswer, is ErrEmptyResult.
func (r *run) checkAnswer(text string) error {
	check := r.a.cfg.CheckAnswer
	if check == nil {
		return nil
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%w: the final answer is empty", ErrEmptyResult)
	}
	if err := check(text); err != nil {
		return fmt.Errorf("%w: %v", ErrEmptyResult, err)
	}
	return nil
}

// elapsed is how long the run has gone on, without the time its
// timeout was paused for a person.
func (r *run) elapsed() time.Duration {
	d := r.a.now().Sub(r.start)
	if r.clock != nil {
		d -= r.clock.waited()
	}
	return d
}
