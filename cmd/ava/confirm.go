package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/lifecycle"
)

// pendingID is the form of a proposal's ID.
var pendingID = lazyre.New(`^P-[0-9a-f]{6}$`)

// askPrompt is the question put to the person under a proposal.
const askPrompt = `Proceed? y / n / or a change ("yes but use haiku"): `

func newConfirmCmd(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   `confirm P-xxxxxx [yes|no|"words"]`,
		Short: "Answer a spawn proposal: yes, no, or yes with a change",
		Long: `Answer a spawn that awaits your confirmation (AVA_CONFIRM): yes starts it,
no drops it, and words such as "yes but use haiku" or "ok, max $1" start it
with that change. Without an answer, on a terminal, it shows the proposal
and asks.

With AVA_ADDR set the proposal is the daemon's (its token is read as for
the other daemon commands); otherwise it is one this data root keeps (from
ava spawn --wait or ava run), and a spawn it starts runs in this process,
which waits for it and prints its result.

The exit code is 0 when the proposal was decided, 1 when the answer was
unclear, or the proposal unknown, decided already or expired, and 2 on a
usage error (a malformed ID, or no answer and no terminal to ask on).`,
		Example: `  ava confirm P-3f9a1c yes
  ava confirm P-3f9a1c "yes but use haiku"
  AVA_ADDR=127.0.0.1:7777 ava confirm P-3f9a1c no`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := strings.TrimSpace(args[0])
			if !pendingID().MatchString(id) {
				return usageError(fmt.Errorf("%q is not a proposal ID (P- and six hex digits, as the proposal shows)", id))
			}
			words := strings.TrimSpace(strings.Join(args[1:], " "))
			if words == "" && !isTerminalReader(a.Stdin) {
				return usageError(fmt.Errorf("no answer to %s and no terminal to ask on: give one, e.g. ava confirm %s yes", id, id))
			}
			if a.Getenv("AVA_ADDR") != "" {
				return confirmOnDaemon(cmd.Context(), a, id, words)
			}
			return confirmHere(cmd.Context(), a, id, words)
		},
	}
	return cmd
}

// answerSource gives the person's answer to a proposal: the words given
// on the command line, else one asked on the terminal.
type answerSource struct {
	// prompt is the question asked (askPrompt when empty).
	prompt string
	words  string
	in     *bufio.Reader
	a      *App
}

// newAnswerSource reads words, or asks on a's terminal when words is
// empty and stdin is one; without either, next fails.
func newAnswerSource(a *App, words string) *answerSource {
	s := &answerSource{words: words, a: a}
	if words == "" && isTerminalReader(a.Stdin) {
		s.in = bufio.NewReader(a.Stdin)
	}
	return s
}

// next returns the answer to try; ok is false when there is none to
// give (no words, no terminal, or the terminal closed).
func (s *answerSource) next(ctx context.Context) (string, bool) {
	if s.words != "" {
		w := s.words
		s.words = ""
		return w, true
	}
	if s.in == nil {
		return "", false
	}
	prompt := s.prompt
	if prompt == "" {
		prompt = askPrompt
	}
	return askLine(ctx, s.in, s.a.Stderr, prompt)
}

// interactive reports whether an unclear answer can be asked again.
func (s *answerSource) interactive() bool { return s.in != nil }

// askLine writes prompt and reads a non-empty line; false at the end of
// input or when ctx ends (Ctrl-C), which leaves the proposal pending.
func askLine(ctx context.Context, in *bufio.Reader, out io.Writer, prompt string) (string, bool) {
	for {
		fmt.Fprint(out, prompt)
		type read struct {
			line string
			err  error
		}
		got := make(chan read, 1)
		go func() {
			line, err := in.ReadString('\n')
			got <- read{strings.TrimSpace(line), err}
		}()
		var r read
		select {
		case r = <-got:
		case <-ctx.Done():
			fmt.Fprintln(out)
			return "", false
		}
		if r.line != "" {
			return r.line, true
		}
		if r.err != nil {
			fmt.Fprintln(out)
			return "", false
		}
	}
}

// confirmHere decides a proposal this data root keeps, and waits for
// what it started.
func confirmHere(ctx context.Context, a *App, id, words string) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: a.Logger()})
	if err != nil {
		return err
	}
	defer rt.Close()
	p, err := rt.Proposal(ctx, id)
	if err != nil {
		return withHint(fmt.Errorf("proposal %s: %w", id, err), "a daemon's proposal is answered with AVA_ADDR set")
	}
	if words == "" {
		fmt.Fprintln(a.Stdout, p.Text)
	}
	d, err := decideLocal(ctx, a, rt, "", id, newAnswerSource(a, words))
	if err != nil {
		return err
	}
	return waitDecided(ctx, a, rt, d)
}

// decideLocal decides proposal id (of session, "" for any) with the
// answers src gives, asking again after an unclear one while it can.
func decideLocal(ctx context.Context, a *App, rt *ava.Runtime, session, id string, src *answerSource) (ava.Decided, error) {
	for {
		words, ok := src.next(ctx)
		if !ok {
			return ava.Decided{}, withHint(fmt.Errorf("no answer to %s: nothing started", id),
				fmt.Sprintf("answer with: ava confirm %s yes (or no, or \"yes but use haiku\")", id))
		}
		d, err := rt.DecideWords(ctx, session, id, words)
		if ava.KindOf(err) == ava.Unclear && src.interactive() {
			fmt.Fprintln(a.Stderr, confirm.AskAgain)
			continue
		}
		if err != nil {
			return ava.Decided{}, err // it names the proposal
		}
		reportDecided(a, d.Decision, d.Change, d.SubagentIDs, id)
		return d, nil
	}
}

// reportDecided tells the person what their answer did.
func reportDecided(a *App, decision, change string, ids []string, id string) {
	if decision != "confirmed" {
		fmt.Fprintf(a.Stderr, "%s declined: nothing started\n", id)
		return
	}
	with := ""
	if change != "" {
		with = " with " + change
	}
	fmt.Fprintf(a.Stderr, "%s confirmed%s: started %s\n", id, with, strings.Join(ids, ", "))
}

// waitDecided waits for the runs a decision started in this process and
// prints their results; a declined proposal has none.
func waitDecided(ctx context.Context, a *App, rt *ava.Runtime, d ava.Decided) error {
	var failed []string
	for _, sid := range d.SubagentIDs {
		done, err := rt.Wait(ctx, sid)
		if err != nil {
			_, _ = rt.Cancel(context.WithoutCancel(ctx), sid)
			return fmt.Errorf("wait for %s: %w", sid, err)
		}
		fmt.Fprintln(a.Stdout, sid)
		if done.Result != nil {
			printResult(a, *done.Result, false)
		}
		if done.Status != lifecycle.Success {
			failed = append(failed, fmt.Sprintf("%s ended with status %s", sid, done.Status))
		}
	}
	if len(failed) > 0 {
		return withCode(1, errors.New(strings.Join(failed, "; ")))
	}
	return nil
}

// confirmOnDaemon answers a proposal the daemon at AVA_ADDR keeps.
func confirmOnDaemon(ctx context.Context, a *App, id, words string) error {
	c, err := a.daemon()
	if err != nil {
		return err
	}
	src := newAnswerSource(a, words)
	if words == "" {
		text, err := daemonProposalText(ctx, c, id)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.Stdout, text)
	}
	for {
		w, ok := src.next(ctx)
		if !ok {
			return withHint(fmt.Errorf("no answer to %s: nothing started", id),
				fmt.Sprintf("answer with: ava confirm %s yes (or no, or \"yes but use haiku\")", id))
		}
		if confirm.Parse(w).Decision == confirm.Unclear && src.interactive() {
			fmt.Fprintln(a.Stderr, confirm.AskAgain)
			continue
		}
		d, err := c.Confirm(ctx, id, client.ConfirmRequest{Answer: w})
		if err != nil {
			return withCode(1, daemonError(c, err))
		}
		reportDecided(a, d.Decision, d.Change, d.SubagentIDs, id)
		for _, sid := range d.SubagentIDs {
			fmt.Fprintln(a.Stdout, sid)
		}
		return nil
	}
}

// daemonProposalText is the text of the daemon's pending proposal id.
func daemonProposalText(ctx context.Context, c *client.Client, id string) (string, error) {
	ps, err := c.Proposals(ctx, "")
	if err != nil {
		return "", daemonError(c, err)
	}
	for _, p := range ps {
		if p.ID == id {
			return p.Text, nil
		}
	}
	return "", fmt.Errorf("proposal %s: no such pending proposal on the daemon at %s (decided, expired or unknown)", id, c.Addr())
}
