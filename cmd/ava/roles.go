package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/subagent"
)

func newRolesCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "roles",
		Short: "List built-in and custom subagent roles",
		Long: `List every subagent role: built-in ones and custom ones from Markdown files
in $AVA_DATA_ROOT/agents/ and the workspace's .ava/agents/. A role file that
cannot be loaded is reported on stderr with its path, line and reason.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			in, err := app.Open(cmd.Context(), cfg, a.Logger(), app.ReadOnly())
			if err != nil {
				return err
			}
			defer in.Close()
			for _, e := range in.RoleErrors {
				fmt.Fprintf(a.Stderr, "warning: role skipped: %v\n", e)
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ROLE\tSOURCE\tMODEL\tTIMEOUT\tMAX COST\tMAX TOKENS\tMAX ITER\tTOOLS")
			for _, r := range subagent.SortedRoles(in.Subagent.Roles()) {
				model := r.Model
				if m, err := in.Catalog.Resolve(r.Model); err == nil {
					model = r.Model + " → " + m.Name()
					if app.IsOffline(m) {
						model += " (offline)"
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f¢\t%d\t%d\t%s\n", r.Name, r.Source, model, r.Limits.Timeout,
					r.Limits.MaxCostCents, r.Limits.MaxTokens, r.Limits.MaxIterations, strings.Join(r.Tools, ","))
			}
			return tw.Flush()
		},
	}
}
