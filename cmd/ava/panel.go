package main

import (
	"fmt"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava/gateway/client"
)

func newPanelCmd(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "panel",
		Short: "Print a one-time link that logs a browser in to the daemon's web panel",
		Long: `Ask the daemon at AVA_ADDR for a new one-time link to its web panel and print
it. Opening the link logs the browser in and spends the link; an unused link
expires after 15 minutes. ava serve prints one at its start when its output
is a terminal.

A login is the browser's session cookie together with a secret its panel tab
keeps: it ends 12 hours after its last use (7 days after it began at the
latest), when the panel's Log out button is pressed, or when it is revoked:
ava panel logins lists them, ava panel revoke ends one or all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.daemon()
			if err != nil {
				return err
			}
			link, err := c.LoginLink(cmd.Context())
			if err != nil {
				return daemonError(c, err)
			}
			fmt.Fprintln(a.Stdout, link)
			return nil
		},
	}
	cmd.AddCommand(newPanelLoginsCmd(a), newPanelRevokeCmd(a))
	return cmd
}

func newPanelLoginsCmd(a *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "logins [--json]",
		Short: "List the browsers logged in to the daemon's web panel",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.daemon()
			if err != nil {
				return err
			}
			ls, err := c.PanelLogins(cmd.Context())
			if err != nil {
				return daemonError(c, err)
			}
			if asJSON {
				return printJSON(a.Stdout, ls)
			}
			if len(ls) == 0 {
				fmt.Fprintln(a.Stdout, "no browser is logged in to the web panel")
				return nil
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSINCE\tEXPIRES\tBROWSER")
			for _, l := range ls {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.ID, l.CreatedAt.Local().Format(time.DateTime),
					l.ExpiresAt.Local().Format(time.DateTime), l.UserAgent)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the logins as JSON")
	return cmd
}

func newPanelRevokeCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID|all",
		Short: "End a web panel login (or all of them) at once",
		Long: `End the web panel login with this ID (see ava panel logins), or every one
with "all": the browser's next call is refused, in every daemon of this data
root or cluster, and its open event streams end within 15 seconds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.daemon()
			if err != nil {
				return err
			}
			if args[0] == "all" {
				n, err := c.RevokePanelLogins(cmd.Context())
				if err != nil {
					return daemonError(c, err)
				}
				fmt.Fprintf(a.Stdout, "revoked %d web panel login(s)\n", n)
				return nil
			}
			if err := c.RevokePanelLogin(cmd.Context(), args[0]); err != nil {
				if client.IsStatus(err, http.StatusNotFound) {
					return withHint(fmt.Errorf("no web panel login %s", args[0]), "ava panel logins lists them")
				}
				return daemonError(c, err)
			}
			fmt.Fprintf(a.Stdout, "revoked %s\n", args[0])
			return nil
		},
	}
}
