package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/config"
)

// Default --last when the query does not name a trace or a time range.
const (
	defaultLast       = 100
	defaultFollowLast = 10
)

type logsOptions struct {
	last    int
	types   []string
	since   string
	until   string
	search  string
	session string
	agent   string
	json    bool
	follow  bool
}

func newLogsCmd(app *App) *cobra.Command {
	var o logsOptions
	cmd := &cobra.Command{
		Use:   "logs [S-xxxxxx] [flags]",
		Short: "Show, search and follow the audit logs (no daemon needed)",
		Long: `Show entries of the audit logs under the data root: the daily logs of every
agent (logs/ava/YYYY-MM-DD.jsonl) or, given a subagent ID (or a unique prefix
of one), that subagent's whole trace (logs/subagents/S-xxxxxx.jsonl).

Without a subagent ID or a time range, the last 100 entries are shown (the
last 10 with --follow); --last N changes that (--last 0: all). Filters
combine. Lines the reader cannot use (a torn last line after a crash, a
corrupt line) are skipped with a warning on stderr naming file:line.

--since and --until take "1 hour ago", "30 minutes ago", "2 days ago", "30m",
"1h", "2d", "today", "yesterday", "2026-11-20", "2026-11-20 14:05" (local
time) or RFC 3339; both are inclusive.`,
		Example: `  ava logs --last 100
  ava logs S-7f3a2b
  ava logs --type error --since "1 hour ago"
  ava logs --search otter.ai --since yesterday
  ava logs --json --type ToolCall,ToolResult | jq .content
  ava logs -f`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogs(cmd.Context(), app, cmd, o, args)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.last, "last", defaultLast, "show only the last N matching entries (0: all)")
	f.StringArrayVar(&o.types, "type", nil, "event types, case-insensitive, repeatable or comma-separated (e.g. error, ToolCall)")
	f.StringVar(&o.since, "since", "", `entries at or after this time ("1 hour ago", 1h, yesterday, 2026-11-20 14:05, …)`)
	f.StringVar(&o.until, "until", "", "entries at or before this time (same forms as --since)")
	f.StringVar(&o.search, "search", "", "case-insensitive text to find in the raw entry")
	f.StringVar(&o.session, "session", "", "only this session: a name (notes: ava:cli:notes), a full key or a subagent ID")
	f.StringVar(&o.agent, "agent", "", `only this agent: "ava" or a subagent ID`)
	f.BoolVar(&o.json, "json", false, "print the raw JSON lines as stored (for jq)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing new entries as they are written (Ctrl-C stops)")
	return cmd
}

func runLogs(ctx context.Context, app *App, cmd *cobra.Command, o logsOptions, args []string) error {
	cfg, err := app.Config()
	if err != nil {
		return err
	}
	root := cfg.DataRoot
	r, closeReader, err := openLogReader(ctx, app, cfg)
	if err != nil {
		return err
	}
	defer closeReader()
	q, err := logsQuery(ctx, app, r, cmd, o, args)
	if isUsage(err) {
		return err
	}
	if !r.Stored() {
		if rootErr := requireDataRoot(root); rootErr != nil {
			return rootErr
		}
	}
	if err != nil {
		return err
	}
	p := newLogPrinter(app, o.json, q)
	if o.follow {
		p.showDate = !q.Since.IsZero() && q.Since.In(app.Now().Location()).Format(time.DateOnly) != app.Now().Format(time.DateOnly)
		err := r.FollowEntries(ctx, q, func(e audit.Entry) error { return p.print(e, true) })
		return logsError(err, r, root)
	}
	entries, skips, err := r.QueryEntries(ctx, q)
	for _, s := range skips {
		warnSkip(app.Stderr)(s)
	}
	if err != nil {
		return logsError(err, r, root)
	}
	p.showDate = spansDays(entries, app.Now())
	for _, e := range entries {
		if err := p.print(e, false); err != nil {
			return err
		}
	}
	if err := p.out.Flush(); err != nil {
		return fmt.Errorf("write logs: %w", err)
	}
	if len(entries) == 0 && !o.json {
		fmt.Fprintf(app.Stderr, "no matching log entries in %s\n", r.Where())
	}
	return nil
}

// openLogReader opens the reader of the logs of cfg: the data root's
// files, or with AVA_DATABASE_URL the cluster's events in PostgreSQL,
// opened read-only (see ava.OpenLogReader).
func openLogReader(ctx context.Context, a *App, cfg config.Config) (*audit.Reader, func() error, error) {
	r, closeReader, err := ava.OpenLogReader(ctx, cfg, nil, audit.ReaderOptions{Clock: a.Now, OnSkip: warnSkip(a.Stderr)})
	if err != nil {
		return nil, nil, fmt.Errorf("open the cluster's logs: %w", err)
	}
	return r, closeReader, nil
}

// logsError says what a reader error means: a trace that does not exist
// is a subagent this data root (or, reading the cluster's store, the
// cluster) never ran, a usage error as an unknown ID is everywhere.
func logsError(err error, r *audit.Reader, root string) error {
	if errors.Is(err, fs.ErrNotExist) && r.Stored() {
		return idMistake(fmt.Errorf("%w: %w: no such subagent in the cluster's logs", err, audit.ErrUnknownSubagent))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return idMistake(fmt.Errorf("%w: %w in the logs of the data root %s (one run under another data root needs --data-root or AVA_DATA_ROOT)", err, audit.ErrUnknownSubagent, root))
	}
	return err
}

// requireDataRoot fails, naming root, when the data root does not exist:
// reading logs never creates one.
func requireDataRoot(root string) error {
	st, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no data root at %s: nothing has been logged there (it is created by the first ava run or ava spawn; to read another, pass --data-root or set AVA_DATA_ROOT)", root)
	}
	if err != nil {
		return fmt.Errorf("data root %s: %w", root, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("data root %s is not a directory", root)
	}
	return nil
}

// logsQuery turns the flags into a query.
func logsQuery(ctx context.Context, app *App, r *audit.Reader, cmd *cobra.Command, o logsOptions, args []string) (audit.Query, error) {
	var q audit.Query
	var err error
	if len(args) == 1 {
		if q.Agent, err = r.ResolveSubagentContext(ctx, args[0]); err != nil {
			return q, idMistake(err)
		}
	}
	if o.agent != "" {
		agent := o.agent
		if strings.EqualFold(agent, "ava") {
			agent = "ava"
		}
		if looksLikeSubagent(agent) {
			if agent, err = r.ResolveSubagentContext(ctx, agent); err != nil {
				return q, idMistake(fmt.Errorf("--agent: %w", err))
			}
		}
		if q.Agent != "" && q.Agent != agent {
			return q, fmt.Errorf("--agent %s contradicts the subagent %s given as argument", o.agent, q.Agent)
		}
		q.Agent = agent
	}
	if q.Types, err = audit.ParseTypes(o.types); err != nil {
		return q, usageError(fmt.Errorf("--type: %w", err))
	}
	now := app.Now()
	if o.since != "" {
		if q.Since, err = audit.ParseTime(o.since, now); err != nil {
			return q, usageError(fmt.Errorf("--since: %w", err))
		}
	}
	if o.until != "" {
		if q.Until, err = audit.ParseTime(o.until, now); err != nil {
			return q, usageError(fmt.Errorf("--until: %w", err))
		}
	}
	q.Search = o.search
	if o.session != "" {
		if q.Session, err = sessionArg(o.session); err != nil {
			return q, fmt.Errorf("--session: %w", err)
		}
	}
	q.Limit, err = logsLimit(cmd, o, q)
	if err != nil {
		return q, err
	}
	return q, q.Validate()
}

// logsLimit applies --last, or its default: everything for a trace or a
// time range, the last 100 (10 when following) otherwise.
func logsLimit(cmd *cobra.Command, o logsOptions, q audit.Query) (int, error) {
	if cmd.Flags().Changed("last") {
		if o.last < 0 {
			return 0, usageError(fmt.Errorf("--last %d: give a positive number, or 0 for all", o.last))
		}
		return o.last, nil
	}
	switch {
	case o.follow:
		if q.Since.IsZero() {
			return defaultFollowLast, nil
		}
		return 0, nil
	case audit.IsSubagentID(q.Agent) || !q.Since.IsZero() || !q.Until.IsZero():
		return 0, nil
	}
	return defaultLast, nil
}

// idMistake makes a subagent ID that is malformed, names no subagent or
// names several a usage error (exit 2), as ava status, stop and send
// have it; a failure to read the logs stays a failure (exit 1).
func idMistake(err error) error {
	if errors.Is(err, audit.ErrBadSubagentID) || errors.Is(err, audit.ErrUnknownSubagent) || errors.Is(err, audit.ErrAmbiguousSubagentID) {
		return &exitError{code: 2, err: err, hint: "ava logs --type SubagentSpawn lists the subagents spawned, with their IDs"}
	}
	return err
}

func looksLikeSubagent(s string) bool {
	return len(s) > 2 && strings.EqualFold(s[:2], "S-")
}

// warnSkip reports a skipped line on stderr.
func warnSkip(w io.Writer) func(audit.Skip) {
	return func(s audit.Skip) {
		if s.File == "" {
			fmt.Fprintf(w, "warning: %s\n", s.Reason)
			return
		}
		fmt.Fprintf(w, "warning: skipped %s\n", s)
	}
}

// logPrinter writes entries as raw JSON lines or human-readable lines.
type logPrinter struct {
	out      *bufio.Writer
	raw      bool
	showDate bool
	opts     audit.FormatOptions
}

func newLogPrinter(app *App, raw bool, q audit.Query) *logPrinter {
	return &logPrinter{
		out: bufio.NewWriterSize(app.Stdout, 64<<10),
		raw: raw,
		opts: audit.FormatOptions{
			Color:     stdoutIsTerminal(app.Stdout),
			ShowAgent: q.Agent == "",
			Location:  app.Now().Location(),
		},
	}
}

// print writes one entry; flush writes it through at once (following).
func (p *logPrinter) print(e audit.Entry, flush bool) error {
	if p.raw {
		p.out.Write(e.Raw)
	} else {
		opts := p.opts
		opts.ShowDate = p.showDate
		p.out.WriteString(audit.FormatLine(e.Event, opts))
	}
	if err := p.out.WriteByte('\n'); err != nil {
		return fmt.Errorf("write logs: %w", err)
	}
	if flush {
		if err := p.out.Flush(); err != nil {
			return fmt.Errorf("write logs: %w", err)
		}
	}
	return nil
}

// spansDays reports whether the entries need dates: some are not from
// today (in now's time zone).
func spansDays(entries []audit.Entry, now time.Time) bool {
	today := now.Format(time.DateOnly)
	for _, e := range entries {
		if e.Event.Time.In(now.Location()).Format(time.DateOnly) != today {
			return true
		}
	}
	return false
}

// stdoutIsTerminal decides colour: only when stdout is a terminal.
func stdoutIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
