package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
)

// App is what every command shares: standard streams, the environment
// and the configuration, loaded once on first use.
type App struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	now    func() time.Time

	// Flag overrides from the root command.
	dataRoot  string
	workspace string
	verbose   bool

	cfg    *config.Config
	logger *slog.Logger
	// started is set when a command's RunE begins, after cobra has
	// parsed and checked the flags, arguments and required flags: an
	// error after that is never a usage error, whatever its text.
	started bool
}

// NewApp returns an App over the given streams and environment.
func NewApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *App {
	return &App{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv, now: time.Now}
}

// Now is the current time.
func (a *App) Now() time.Time { return a.now() }

// Config loads, overrides and validates the configuration once.
func (a *App) Config() (config.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	a.cfg = &cfg
	return cfg, nil
}

// loadConfig reads the configuration as Config does, not cached and not
// yet validated: the daemon reads it again on reload (and validates it
// there, naming the lines).
func (a *App) loadConfig() (config.Config, error) {
	getenv := a.Getenv
	if a.dataRoot != "" {
		getenv = func(k string) string {
			if k == "AVA_DATA_ROOT" {
				return a.dataRoot
			}
			return a.Getenv(k)
		}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return cfg, err
	}
	if a.workspace != "" {
		cfg.Workspace = a.workspace
	}
	return cfg, nil
}

// Logger is the operational logger: warnings and errors to stderr, debug
// with --verbose.
func (a *App) Logger() *slog.Logger {
	if a.logger == nil {
		level := slog.LevelWarn
		if a.verbose {
			level = slog.LevelDebug
		}
		a.logger = slog.New(slog.NewTextHandler(a.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return a.logger
}

// IsTerminal reports whether w is a terminal (for colour and live
// progress).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// exitError carries an exit code and an optional hint for the user.
type exitError struct {
	code int
	err  error
	hint string
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withHint wraps err with a hint printed under it.
func withHint(err error, hint string) error {
	return &exitError{code: 1, err: err, hint: hint}
}

// withCode wraps err with an exit code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// usageError marks err as a usage error: a bad flag value (exit 2).
func usageError(err error) error { return withCode(2, err) }

// isUsage reports whether err is a usage error (exit 2).
func isUsage(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.code == 2
}

// Main runs the command line and returns the exit code: 0 on success, 1
// on failure, 2 on a usage error.
func Main(ctx context.Context, args []string, app *App) int {
	root := newRootCmd(app)
	root.SetArgs(args)
	root.SetIn(app.Stdin)
	root.SetOut(app.Stdout)
	root.SetErr(app.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	code := 1
	if errors.As(err, &ee) {
		code = ee.code
	} else if !app.started && isUsageError(err) {
		code = 2
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintf(app.Stderr, "ava: %v\n", err)
		if ee != nil && ee.hint != "" {
			fmt.Fprintf(app.Stderr, "hint: %s\n", ee.hint)
		}
		if code == 2 {
			fmt.Fprintf(app.Stderr, "Run '%s --help' for usage.\n", helpPath(root, cmd))
		}
	}
	return code
}

// helpPath is the command line whose --help a usage error points at:
// the subcommand that failed ("ava send"), or "ava" when cobra found none
// (an unknown command).
func helpPath(root, cmd *cobra.Command) string {
	if cmd == nil {
		return root.Name()
	}
	return cmd.CommandPath()
}

// errSilent marks an error already reported to the user.
var errSilent = errors.New("already reported")

func isUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func newRootCmd(app *App) *cobra.Command {
	root := &cobra.Command{
		Use:   "ava",
		Short: "Ava: an orchestrator agent with background subagents",
		Long: `Ava is an orchestrator agent that hands focused, parallel or token-heavy work
to background subagents, keeps you informed while they run, lets you stop or
talk to any of them, and keeps a durable, searchable record of everything.

Configuration comes from environment variables (ANTHROPIC_API_KEY,
OPENROUTER_API_KEY, OPENAI_API_KEY, OPENAI_BASE_URL, AVA_MODEL,
AVA_DATA_ROOT, …), the optional file $AVA_DATA_ROOT/config.yaml, and flags.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       ava.Version(),
	}
	root.SetVersionTemplate("ava {{.Version}}\n")
	root.PersistentFlags().StringVar(&app.dataRoot, "data-root", "", "data root (default $AVA_DATA_ROOT, else $XDG_DATA_HOME/ava or ~/.local/share/ava)")
	root.PersistentFlags().StringVar(&app.workspace, "workspace", "", "folder the file and shell tools work in (default $AVA_WORKSPACE, else the current directory)")
	root.PersistentFlags().BoolVarP(&app.verbose, "verbose", "v", false, "log debug details to stderr")
	root.AddCommand(
		newRunCmd(app),
		newLogsCmd(app),
		newSpawnCmd(app),
		newRolesCmd(app),
		newTrustCmd(app),
		newServeCmd(app),
		newWorkerCmd(app),
		newPsCmd(app),
		newPanelCmd(app),
		newStatusCmd(app),
		newStopCmd(app),
		newSendCmd(app),
		newChatCmd(app),
		newConfirmCmd(app),
		newMCPCmd(app),
		newHooksCmd(app),
		newReloadCmd(app),
	)
	strictCompletion(root)
	markStarted(app, root)
	return root
}

// strictCompletion makes "ava completion SHELL" a usage error (exit 2)
// for a shell it has no script for (tcsh: cobra then answers "unknown
// command"), instead of cobra's help and exit 0: a runnable command
// refuses arguments that name no subcommand. "ava completion" alone
// still prints the help.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// markStarted wraps every command's RunE so that it first marks the app
// started: cobra calls RunE only after checking flags, arguments and
// required flags, so errors from there on are failures (exit 1) even
// when their text looks like cobra's (an OS error "invalid argument", a
// path containing "accepts ").
func markStarted(app *App, cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			app.started = true
			return run(c, args)
		}
	}
	for _, sub := range cmd.Commands() {
		markStarted(app, sub)
	}
}
