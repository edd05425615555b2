package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/chat"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/lifecycle"
)

func newChatCmd(a *App) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "chat [--session KEY] [--yes]",
		Short: "Chat with Ava in the terminal",
		Long: `Chat with Ava in the terminal: the answer streams as it is written, tool
calls and subagents show as status lines, a footer lists the running
subagents, and a spawn that needs your confirmation asks "Proceed?" (answer
y, n or in words: "yes but use haiku", "ok, max $1").

Ctrl-D leaves. Ctrl-C stops the current request and the subagents it
started; a second Ctrl-C within 2 seconds leaves too. Commands: /ps, /stop [ID],
/send ID message, /logs [ID], /yes [P-ID], /help, /exit.

It runs Ava in this process (subagents stop when you leave), or talks to the
daemon at AVA_ADDR when that is set: then the session lives on the daemon,
and what other channels of the same session do shows here too.

` + sessionRule,
		Example: `  ava chat
  ava chat --offline
  AVA_ADDR=127.0.0.1:7777 ava chat --session ava:telegram:12345`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFlags(a, cmd); err != nil {
				return err
			}
			if o.session != "" {
				var err error
				if o.session, err = mainSessionArg("--session", o.session); err != nil {
					return err
				}
			}
			if !isTerminalReader(a.Stdin) {
				return errors.New("ava chat needs a terminal; for one message from a script use: ava run \"…\"")
			}
			if a.Getenv("AVA_ADDR") != "" {
				return chatRemote(cmd, a, o)
			}
			return chatLocal(cmd.Context(), a, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.yes, "yes", false, "spawns start without asking you first (AVA_CONFIRM=never for this chat; on a daemon, its proposals are confirmed as they arrive)")
	f.StringVar(&o.model, "model", "", "model as provider/model or an alias: haiku, sonnet, opus (default $AVA_MODEL)")
	f.StringVar(&o.session, "session", "", "continue this session (a name such as notes is ava:cli:notes, or a full key), shown from its earlier conversation on (default: a new ava:chat:… session)")
	addTurnFlags(f, &o, "each request")
	addOfflineFlag(cmd, &o.offline)
	return cmd
}

// chatLocal runs the chat on a runtime in this process.
func chatLocal(ctx context.Context, a *App, o runOptions) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	if o.yes {
		cfg.Confirm = "never"
	}
	cfg, _ = a.chooseModel(cfg, o.offline, o.model)
	// The screen is the chat's: warnings go to a file under the data root.
	logPath := filepath.Join(cfg.DataRoot, "chat.log")
	if err := cfg.EnsureDataRoot(); err != nil {
		return err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("chat log: %w", err)
	}
	defer logFile.Close()
	before, _ := logFile.Seek(0, io.SeekEnd)
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: logLevel(a.verbose)}))
	rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: logger})
	if err != nil {
		return err
	}
	defer rt.Close()
	model, err := o.orchestratorModel(rt)
	if err != nil {
		return withCode(1, err)
	}
	key := o.session
	if key == "" {
		key = "ava:chat:" + uuid.NewString()[:8]
	}
	banner := fmt.Sprintf("Ava chat · session %s · model %s", key, model)
	if ava.IsOffline(model) {
		banner += " (offline scripted model: no network, not a real model)"
	}
	b := &chat.Local{Runtime: rt, Session: key, Options: ava.SendOptions{User: a.Getenv("USER"),
		Model: model, Budget: o.budget, Limits: o.limits()}}
	err = chat.Run(ctx, chat.Options{Backend: b, In: a.Stdin, Out: a.Stdout, Styled: terminal.Styled(a.Stdout, a.Getenv), Banner: banner})
	running, _ := rt.Subagents(context.WithoutCancel(ctx), ava.SubagentFilter{Parent: key, Status: lifecycle.Active})
	if n := len(running); n > 0 {
		fmt.Fprintf(a.Stderr, "stopping %d running subagent(s) of %s\n", n, key)
	}
	if end, _ := logFile.Seek(0, io.SeekEnd); end > before {
		fmt.Fprintf(a.Stderr, "warnings were logged to %s\n", logPath)
	}
	fmt.Fprintf(a.Stderr, "session %s: continue with %s\n", key, o.continueCmd("chat", key))
	return err
}

// chatRemote runs the chat on the daemon at AVA_ADDR.
func chatRemote(cmd *cobra.Command, a *App, o runOptions) error {
	for _, name := range append([]string{"offline", "model"}, limitFlags...) {
		if cmd.Flags().Changed(name) {
			return usageError(fmt.Errorf("--%s applies to an in-process chat; with AVA_ADDR set the daemon's model and limits apply", name))
		}
	}
	c, err := a.daemon()
	if err != nil {
		return err
	}
	h, err := c.Health(cmd.Context())
	if err != nil {
		return daemonError(c, err)
	}
	b := chat.NewRemote(c, o.session)
	banner := fmt.Sprintf("Ava chat · daemon %s · model %s", c.Addr(), h.Model)
	if o.session != "" {
		banner += " · session " + o.session
	}
	err = chat.Run(cmd.Context(), chat.Options{Backend: b, In: a.Stdin, Out: a.Stdout, Yes: o.yes, Styled: terminal.Styled(a.Stdout, a.Getenv),
		Banner: banner})
	if key := b.Key(); key != "" {
		fmt.Fprintf(a.Stderr, "session %s lives on the daemon: continue with ava chat --session %s\n", key, key)
	}
	return err
}

// isTerminalReader reports whether r is a terminal.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// logLevel is the operational log level: debug with --verbose.
func logLevel(verbose bool) slog.Level {
	if verbose {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
