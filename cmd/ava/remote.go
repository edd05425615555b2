package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/internal/money"
)

// daemon returns a client of the daemon at AVA_ADDR (or the config
// file's addr), with its token: AVA_TOKEN when set, else the one the
// daemon keeps in the data root. With neither, the client goes without
// one, and the daemon's 401 says what to do.
func (a *App) daemon() (*client.Client, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	return daemonOf(cfg)
}

// daemonOf is daemon for cfg.
func daemonOf(cfg config.Config) (*client.Client, error) {
	tok := cfg.Token
	if tok == "" {
		var err error
		tok, err = client.ReadToken(cfg.DataRoot)
		if errors.Is(err, fs.ErrNotExist) {
			tok, err = "", nil
		}
		if err != nil {
			return nil, withHint(err, "set AVA_TOKEN to the daemon's token")
		}
	}
	return client.New(cfg.Addr, tok), nil
}

// daemonError explains a failed call to the daemon.
func daemonError(c *client.Client, err error) error {
	switch {
	case errors.Is(err, client.ErrNoDaemon):
		return withHint(fmt.Errorf("no Ava daemon is running at %s", c.Addr()),
			"start one with: ava serve (or point AVA_ADDR at the one you run)")
	case client.IsStatus(err, http.StatusUnauthorized):
		return withHint(err, "set AVA_TOKEN to the daemon's token, or AVA_DATA_ROOT (--data-root) to the daemon's data root, whose "+
			client.TokenFileName+" the command line reads")
	case client.IsStatus(err, http.StatusConflict):
		return withHint(err, "add --queue to deliver the message when the running turn ends, --steer (a running subagent) to deliver it before its next model call, or stop it with ava stop")
	}
	return err
}

// idError explains a failed call about one subagent or session: an ID
// the daemon refuses (400, "S-") or does not know (404) is a usage error
// (exit 2) with where to find the IDs; the rest as daemonError.
func idError(c *client.Client, err error) error {
	if client.IsStatus(err, http.StatusNotFound) || client.IsStatus(err, http.StatusBadRequest) {
		return &exitError{code: 2, err: err, hint: idHint}
	}
	return daemonError(c, err)
}

func newPsCmd(a *App) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "ps [--all] [--json]",
		Short: "List subagents (from the daemon)",
		Long: `List the daemon's subagents: ID, role, status, elapsed time, tokens, cost and
current activity (a stalled subagent shows "stalled"). Running ones only,
unless --all. Talks to the daemon at AVA_ADDR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.daemon()
			if err != nil {
				return err
			}
			f := client.SubagentFilter{Status: []string{"active"}}
			if all {
				f.Status = nil
			}
			list, err := c.Subagents(cmd.Context(), f)
			if err != nil {
				return daemonError(c, err)
			}
			if asJSON {
				return printJSON(a.Stdout, list)
			}
			printPs(a.Stdout, subagentsOf(list))
			if len(list) == 0 && !all {
				fmt.Fprintln(a.Stderr, "no subagent is running (ava ps --all lists finished ones)")
				return nil
			}
			printSpend(cmd.Context(), a.Stdout, c, list)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also list finished subagents")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// subagentsOf is the daemon's subagents as the core's view, which the
// command line renders.
func subagentsOf(list []client.Subagent) []ava.Subagent {
	out := make([]ava.Subagent, len(list))
	for i, s := range list {
		out[i] = terminal.FromClient(s)
	}
	return out
}

func printPs(w io.Writer, list []ava.Subagent) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tSTATUS\tELAPSED\tTOKENS\tCOST\tACTIVITY")
	for _, s := range list {
		status := string(s.Status)
		if s.Stalled {
			status += " (stalled)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Role, status,
			terminal.Elapsed(s.Elapsed), s.Tokens, money.Spend(s.CostCents, s.Tokens, false), oneLine(s.Activity, 60))
	}
	tw.Flush()
}

// printSpend prints the spend of the sessions the listed subagents
// belong to: their own, their subagents', the total and per model.
func printSpend(ctx context.Context, w io.Writer, c *client.Client, list []client.Subagent) {
	seen, printed := map[string]bool{}, false
	for _, sa := range list {
		if sa.Parent == "" || seen[sa.Parent] {
			continue
		}
		seen[sa.Parent] = true
		s, err := c.Session(ctx, sa.Parent)
		if err != nil {
			continue // a parent that is not a stored main session (ava:api:spawns)
		}
		if !printed {
			fmt.Fprintln(w, "\nSPEND (own turns · all subagents · total, by model)")
			printed = true
		}
		sp := s.Spend
		var models []string
		for _, m := range sp.ByModel {
			models = append(models, fmt.Sprintf("%s %s", m.Model, spendUsage(client.Usage{Tokens: m.Tokens, CostCents: m.CostCents, CachedTokens: m.CachedTokens})))
		}
		fmt.Fprintf(w, "%s: own %s · subagents %s · total %s", s.Key, spendUsage(sp.Own), spendUsage(sp.Subagents), spendUsage(sp.Total))
		if len(models) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(models, ", "))
		}
		fmt.Fprintln(w)
	}
}

// spendUsage is usage, with the tokens read from the provider's prompt
// cache when there are any: "2.50¢/1234 tokens (900 cached)".
func spendUsage(u client.Usage) string {
	if u.CachedTokens > 0 {
		return fmt.Sprintf("%s (%d cached)", usage(u.Tokens, u.CostCents), u.CachedTokens)
	}
	return usage(u.Tokens, u.CostCents)
}

// usage is cost and tokens as people read them: "2.50¢/1234 tokens".
func usage(tokens int, cents float64) string {
	return fmt.Sprintf("%s/%d tokens", money.Spend(cents, tokens, false), tokens)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(terminal.Printable(s)), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func newStatusCmd(a *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status S-xxxxxx",
		Short: "Show one subagent (from the daemon)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := subagentArg(args[0])
			if err != nil {
				return err
			}
			c, err := a.daemon()
			if err != nil {
				return err
			}
			s, err := c.Subagent(cmd.Context(), id)
			if err != nil {
				return idError(c, err)
			}
			if asJSON {
				return printJSON(a.Stdout, s)
			}
			printStatus(a.Stdout, terminal.FromClient(s))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printStatus(w io.Writer, s ava.Subagent) {
	status := string(s.Status)
	if s.Stalled {
		status += " (stalled)"
	}
	fmt.Fprintf(w, "%s  %s  %s\n", s.ID, s.Role, status)
	fmt.Fprintf(w, "task:     %s\n", oneLine(s.Task, 200))
	fmt.Fprintf(w, "model:    %s\n", s.Model)
	if s.Parent != "" {
		fmt.Fprintf(w, "parent:   %s\n", s.Parent)
	}
	fmt.Fprintf(w, "elapsed:  %s · %d tokens · %s · %d iterations\n",
		terminal.Elapsed(s.Elapsed), s.Tokens, money.Spend(s.CostCents, s.Tokens, false), s.Iterations)
	if s.Activity != "" {
		fmt.Fprintf(w, "activity: %s\n", oneLine(s.Activity, 200))
	}
	if s.Result != nil && s.Result.Summary != "" {
		fmt.Fprintf(w, "summary:  %s\n", terminal.Printable(s.Result.Summary))
	}
	if s.Error != "" {
		fmt.Fprintf(w, "error:    %s\n", terminal.Printable(s.Error))
	}
}

func newStopCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "stop S-xxxxxx|SESSION",
		Short: "Stop a subagent or a session's turn (through the daemon)",
		Long:  "Stop a running subagent, or the running turn of a session, on the daemon at AVA_ADDR.\n\n" + sessionRule,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := sessionArg(args[0])
			if err != nil {
				return err
			}
			c, err := a.daemon()
			if err != nil {
				return err
			}
			r, err := c.Stop(cmd.Context(), key)
			if err != nil {
				return idError(c, err)
			}
			if r.Stopped {
				fmt.Fprintf(a.Stdout, "stopped %s\n", r.SessionKey)
			} else {
				fmt.Fprintf(a.Stdout, "%s was not running\n", r.SessionKey)
			}
			return nil
		},
	}
}

func newSendCmd(a *App) *cobra.Command {
	var queue, steer, asJSON bool
	cmd := &cobra.Command{
		Use:   `send S-xxxxxx|SESSION [--queue|--steer] "message"`,
		Short: "Send a message to a subagent or a session (through the daemon)",
		Long: `Send a follow-up message to a subagent (it resumes with its conversation) or
to a main session, and print the answer when the turn ends. While it runs,
the message is refused unless --queue, which delivers it when the running
turn ends, or (for a running subagent) --steer, which delivers it into its
conversation before its next model call without stopping it. Ctrl-C stops
waiting; the turn goes on in the daemon.

` + sessionRule,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := checkSend(args[0], queue, steer)
			if err != nil {
				return err
			}
			c, err := a.daemon()
			if err != nil {
				return err
			}
			return send(cmd.Context(), a, c, client.ChatRequest{SessionKey: key,
				Message: strings.Join(args[1:], " "), Queue: queue, Steer: steer}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&queue, "queue", false, "deliver the message when the running turn ends instead of refusing it")
	cmd.Flags().BoolVar(&steer, "steer", false, "for a running subagent: deliver the message into its conversation before its next model call, without stopping it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the turn's result as JSON")
	return cmd
}

// checkSend refuses, as usage errors (exit 2), a malformed ID or key and
// --queue with --steer (a message either waits for the turn or steers
// it), and returns the session key the message goes to.
func checkSend(id string, queue, steer bool) (string, error) {
	if queue && steer {
		return "", usageError(errors.New("--queue and --steer: give one, not both (--queue waits for the running turn, --steer delivers into it)"))
	}
	return sessionArg(id)
}

// send posts a message and waits for its turn's result.
func send(ctx context.Context, a *App, c *client.Client, req client.ChatRequest, asJSON bool) error {
	st, err := c.Chat(ctx, req)
	if err != nil {
		return idError(c, err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(a.Stderr, "stopped waiting; the message goes on in the daemon (ava logs --session %s)\n", req.SessionKey)
				return withCode(1, ctx.Err())
			}
			return fmt.Errorf("stream of %s ended before the turn did: %w", req.SessionKey, err)
		}
		switch ev.Type {
		case client.EventSession:
			var s client.ChatStart
			if json.Unmarshal(ev.Data, &s) == nil && s.Queued && !asJSON {
				fmt.Fprintf(a.Stderr, "[queued: %s is busy; the message runs when its turn ends]\n", s.SessionKey)
			}
		case client.EventDone:
			var r client.TurnResult
			if err := json.Unmarshal(ev.Data, &r); err != nil {
				return fmt.Errorf("decode the result: %w", err)
			}
			return printTurn(a, r, asJSON)
		}
	}
}

func printTurn(a *App, r client.TurnResult, asJSON bool) error {
	if asJSON {
		if err := printJSON(a.Stdout, r); err != nil {
			return err
		}
	} else if r.Text != "" {
		fmt.Fprintln(a.Stdout, terminal.Printable(r.Text))
	}
	if r.Status == client.StatusReplayed {
		// A retry of this call met its first attempt's message: it was
		// sent once, and its turn is no longer followed here.
		fmt.Fprintf(a.Stderr, "the message was sent once already; its answer is in the session: ava logs --session %s\n", r.Session)
		return nil
	}
	if r.Status != "success" {
		return withCode(1, fmt.Errorf("turn ended with status %s%s", r.Status, colonSuffix(r.Error)))
	}
	return nil
}

// colonSuffix is ": s", or "" for an empty s.
func colonSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
