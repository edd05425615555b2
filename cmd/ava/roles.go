package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/internal/money"
)

func newRolesCmd(a *App) *cobra.Command {
	var stats, mcpTools bool
	cmd := &cobra.Command{
		Use:   "roles [--stats]",
		Short: "List built-in and custom subagent roles",
		Long: `List every subagent role: built-in ones and custom ones from Markdown files
in $AVA_DATA_ROOT/agents/ and the workspace's .ava/agents/. A role file that
cannot be loaded is reported on stderr with its path, line and reason.

A role file in the workspace's .ava/agents/ is trusted only as ava trust
recorded it: a file of an untrusted workspace, or one new or changed since
ava trust, is marked UNTRUSTED in the SOURCE column and loads limited (no
process, memory or MCP tools, no network, no scripted model, the
researcher's limits at most); what was withheld or lowered is listed
below the table. Such a file that has the name of a built-in or user role
is skipped with a warning. A role that replaces another is marked
OVERRIDES in the SOURCE column and named in a warning.

A tool a role lists but no subagent ever gets (memory_write, the spawn and
subagent tools) is shown as withheld, with the reason. A role's MCP servers
are shown as mcp:<server>; their tools (named <server>__<tool>) are only
known once a server runs, so --mcp-tools starts each role's servers, lists
the tools its subagents get, and stops them again. Below the table, a line
says which sandbox protections run_bash and python_exec have on this
machine, and one line per stdio MCP server how it runs: sandboxed (with or
without network) or UNSANDBOXED (sandbox: false, AVA_SANDBOX=off), the
latter also as a warning on stderr.

With --stats, each role's finished runs in the store instead: how many,
their median time and cost, and the estimate hit rate: the share of runs
whose actual time and cost fell inside the estimate made, from the runs
before them, when they were spawned (HIST HIT: the same for runs whose
estimate came from past runs rather than from the role's limits).

When a daemon answers at AVA_ADDR (with this data root's token), ava roles
lists the roles that daemon runs, as its last reload left them, and says
so; --stats, --mcp-tools, or no daemon: the roles the files define now.

ava roles only reads: it creates and writes nothing in the data root, so
it works on a read-only one, or a missing one (built-in roles, no runs).
A store of an older schema is not migrated: --stats then shows no runs,
and the log says why.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stats && !mcpTools && printDaemonRoles(cmd.Context(), a) {
				return nil
			}
			in, err := a.openRoles(cmd.Context())
			if err != nil {
				return err
			}
			defer in.Close()
			for _, r := range in.Roles() {
				if r.Overrides != "" {
					fmt.Fprintf(a.Stderr, "WARNING: role %s from %s REPLACES the role of the same name from %s\n", r.Name, r.Source, r.Overrides)
				}
			}
			warnTrustChanges(a, in)
			if !ava.ProviderConfigured(in.Config()) {
				fmt.Fprintln(a.Stderr, "note: no model provider is configured (set ANTHROPIC_API_KEY, OPENROUTER_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL): until then roles run on the offline scripted model")
			}
			if stats {
				return printRoleStats(cmd.Context(), a, in)
			}
			if err := printRoles(a, in); err != nil {
				return err
			}
			if mcpTools {
				return printRoleMCPTools(cmd.Context(), a, in)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&stats, "stats", false, "show each role's past runs: count, median time and cost, estimate hit rate")
	cmd.Flags().BoolVar(&mcpTools, "mcp-tools", false, "start each role's MCP servers and list the tools they give its subagents")
	return cmd
}

// printRoleStats writes the roles' statistics table.
func printRoleStats(ctx context.Context, a *App, in *ava.Runtime) error {
	st, err := in.RoleStats(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tRUNS\tMEDIAN TIME\tMEDIAN COST\tHIT RATE\tHIST HIT")
	for _, s := range st {
		if s.Runs == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\n", s.Role)
			continue
		}
		hist := "-"
		if s.HistoryScored > 0 {
			hist = fmt.Sprintf("%.0f%% of %d", 100*s.HistoryHitRate, s.HistoryScored)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1fs\t%s\t%.0f%% of %d\t%s\n", s.Role, s.Runs, s.MedianSeconds, money.Cents(s.MedianCostCents),
			100*s.HitRate, s.Scored, hist)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write role stats: %w", err)
	}
	return nil
}

// printRoles writes the roles table.
func printRoles(a *App, in *ava.Runtime) error {
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tSOURCE\tMODEL\tTIMEOUT\tMAX COST\tMAX TOKENS\tMAX ITER\tTOOLS")
	for _, r := range in.Roles() {
		model, err := roleModel(in, r)
		if err != nil {
			fmt.Fprintf(a.Stderr, "warning: role %s: %v\n", r.Name, err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f¢\t%d\t%d\t%s\n", r.Name, roleSource(r), model, r.Limits.Timeout,
			r.Limits.MaxCostCents, r.Limits.MaxTokens, r.Limits.MaxIterations, roleTools(r))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write roles: %w", err)
	}
	printWithheld(a, in.Roles())
	// run_bash and python_exec: which protections they run with here.
	fmt.Fprintf(a.Stdout, "\nrun_bash, python_exec: %s\n", in.SandboxSummary())
	printRoleSearch(a, in)
	printMCPConfinement(a, in)
	return nil
}

// printRoleSearch writes which web search each role with web_search
// gets on its model (the web_search setting).
func printRoleSearch(a *App, in *ava.Runtime) {
	if !ava.ProviderConfigured(in.Config()) {
		return
	}
	for _, r := range in.Roles() {
		if s := in.RoleSearch(r); s != "" {
			fmt.Fprintf(a.Stdout, "web_search of %s: %s\n", r.Name, s)
		}
	}
}

// roleSource is where the role came from, and loudly what it replaced
// or that it is untrusted.
func roleSource(r ava.Role) string {
	switch {
	case r.Untrusted:
		return r.Source + " (UNTRUSTED: " + r.UntrustedWhy + ")"
	case r.Overrides != "":
		return r.Source + " (OVERRIDES " + r.Overrides + ")"
	}
	return r.Source
}

// printWithheld lists, for each untrusted workspace role, what the
// workspace gate withheld from it or lowered.
func printWithheld(a *App, roles []ava.Role) {
	any := false
	for _, r := range roles {
		if !r.Untrusted {
			continue
		}
		any = true
		withheld := "nothing"
		if len(r.Withheld) > 0 {
			withheld = strings.Join(r.Withheld, "; ")
		}
		fmt.Fprintf(a.Stdout, "\nUNTRUSTED role %s (%s): limited to no process, memory or MCP tools, no network, no scripted model, the researcher's limits; withheld: %s",
			r.Name, r.Source, withheld)
	}
	if any {
		fmt.Fprintln(a.Stdout)
	}
}

// warnTrustChanges warns when the workspace is trusted but its role
// files are not what was trusted.
func warnTrustChanges(a *App, in *ava.Runtime) {
	cfg := in.Config()
	trusted, changes, _, err := ava.WorkspaceTrust(cfg, cfg.Workspace)
	if err != nil || !trusted || len(changes) == 0 {
		return
	}
	var parts []string
	for _, c := range changes {
		parts = append(parts, c.Kind+" "+c.Path)
	}
	fmt.Fprintf(a.Stderr, "WARNING: role files changed since the workspace was trusted (%s): they are untrusted until you review them and run ava trust again\n", strings.Join(parts, ", "))
}

// roleModel is the role's model as named and as resolved, and why it
// does not resolve. With no provider configured that is the offline
// model, as the offline rule runs roles on it then (see offlineRule).
func roleModel(in *ava.Runtime, r ava.Role) (string, error) {
	name, err := in.RoleModel(r)
	if err != nil {
		return r.Model + " → unresolved", err
	}
	model := r.Model + " → " + name
	if ava.IsOffline(name) {
		model += " (offline)"
	}
	return model, nil
}

// roleTools lists the tools, marking each one a subagent never gets,
// then the role's MCP servers as mcp:<server>.
func roleTools(r ava.Role) string {
	out := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t
		if why := ava.WithheldReason(t); why != "" {
			out[i] = t + " (withheld: " + why + ")"
		}
	}
	for _, n := range r.MCPServerNames() {
		out = append(out, "mcp:"+n)
	}
	return strings.Join(out, ",")
}

// printMCPConfinement writes how each MCP server roles use runs (the
// stdio ones: sandboxed or UNSANDBOXED), below the sandbox line.
func printMCPConfinement(a *App, in *ava.Runtime) {
	servers := in.MCPServers()
	for _, s := range servers {
		if s.Kind == "stdio" && len(s.Roles) > 0 {
			fmt.Fprintf(a.Stdout, "mcp:%s: %s\n", s.Name, s.Confinement)
		}
	}
	warnUnsandboxed(a, servers)
}

// printRoleMCPTools starts each role's MCP servers and lists the tools
// they give it; a server that fails is named on stderr and makes the
// exit status 1.
func printRoleMCPTools(ctx context.Context, a *App, in *ava.Runtime) error {
	var failed bool
	fmt.Fprintln(a.Stdout, "\nMCP tools:")
	for _, r := range in.Roles() {
		if len(r.MCPServers) == 0 {
			continue
		}
		names, err := in.RoleMCPTools(ctx, r)
		if err != nil {
			failed = true
			fmt.Fprintf(a.Stderr, "warning: role %s: %v\n", r.Name, err)
		}
		list := strings.Join(names, ",")
		if list == "" {
			list = "(none)"
		}
		fmt.Fprintf(a.Stdout, "%s: %s\n", r.Name, list)
	}
	if failed {
		return errors.New("some MCP servers failed to start (see above)")
	}
	return nil
}

// openRoles opens a read-only runtime to look at the roles, reporting
// once each role file it cannot load.
func (a *App) openRoles(ctx context.Context) (*ava.Runtime, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	// The role files Open cannot load are reported once, below.
	log := slog.New(dropMessage{Handler: dropMessage{Handler: a.Logger().Handler(), msg: ava.RoleSkippedMessage}, msg: ava.RoleOverrideMessage})
	in, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: log, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	for _, e := range in.RoleErrors() {
		fmt.Fprintf(a.Stderr, "warning: role skipped: %v\n", e)
	}
	return in, nil
}

// dropMessage is a log handler that leaves out the records whose message
// is msg.
type dropMessage struct {
	slog.Handler
	msg string
}

// Handle passes r on unless its message is the dropped one.
func (d dropMessage) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == d.msg {
		return nil
	}
	return d.Handler.Handle(ctx, r)
}

// WithAttrs keeps dropping in the derived handler.
func (d dropMessage) WithAttrs(attrs []slog.Attr) slog.Handler {
	return dropMessage{Handler: d.Handler.WithAttrs(attrs), msg: d.msg}
}

// WithGroup keeps dropping in the derived handler.
func (d dropMessage) WithGroup(name string) slog.Handler {
	return dropMessage{Handler: d.Handler.WithGroup(name), msg: d.msg}
}
