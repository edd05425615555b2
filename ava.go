// Package ava is Ava's application core and its public Go API: one
// Runtime that every surface calls — the daemon's HTTP API (package
// gateway), the MCP server (package mcpserver), the chat channels
// (Telegram, `ava chat`), the command line — and that a Go program embeds
// the same way.
//
// A Runtime sends messages to sessions and follows their events; spawns
// subagents or proposes them for the person's confirmation, and decides
// proposals; lists the questions subagents ask and answers them; shows
// subagents and sessions with their figures (tokens, cost, iterations,
// active and wall time, from one read model, so every surface shows the
// same numbers); reads the audit log; and tells observers what happens.
// Everything it returns is masked with the instance's redactor: a secret
// a subagent read never leaves through any surface.
//
// Open a Runtime with Open and close it with Close:
//
//	rt, err := ava.Open(ctx, ava.Options{Config: cfg})
//	if err != nil { ... }
//	defer rt.Close()
//	turn, err := rt.Send(ctx, "ava:cli:main", "research X", ava.SendOptions{})
//
// Two defaults meet a program first. With no model provider configured
// and no model named, Send and Spawn return ErrNoModel, whose message says
// what to set; Offline sets a configuration to the offline scripted model
// instead, as `ava serve` does. And the confirmation policy (AVA_CONFIRM)
// is "always" unless set: Spawn then returns a Proposal, which Decide
// starts.
//
// What is stable is written in docs/library.md.
package ava

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/attach"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/tool"
)

// Options configure Open.
type Options struct {
	// Config is the configuration (config.Load reads it from defaults,
	// the data root's config.yaml, the environment and flags). The zero
	// value of its fields means the defaults; DataRoot must be set.
	Config config.Config
	// Logger receives the runtime's logs (default slog.Default()).
	Logger *slog.Logger
	// ReadOnly opens for looking only (`ava roles`, inspection): no
	// process registration, no recovery of other processes' runs, no
	// sessions; Send and Spawn fail with ErrReadOnly. It creates and
	// writes nothing: no data root (a missing one gives the built-in
	// roles and an empty store), the SQLite file opened read-only and
	// never migrated (a missing or older one reads as empty), no audit
	// log or session files; so it works on a read-only data root.
	ReadOnly bool
	// Tools are tools of the embedding program, added to the built-in
	// ones: a role that names one in its tools gets it.
	Tools []Tool
	// Roles are roles of the embedding program, added to the built-in
	// ones and the role files (a role file of the same name in the data
	// root replaces it, as it replaces a built-in).
	Roles []Role
	// Sinks receive every kept event after the audit log has (the
	// daemon's metrics). A sink is on the publishing path: it must be
	// quick and must not publish. Observers (Runtime.Observe) are the
	// extension point that may be slow.
	Sinks []Sink
	// Load reads the configuration again, as Config was read
	// (config.yaml, the environment, the program's flags): Reload and
	// WatchConfig call it. Nil: the runtime cannot reload (ErrInvalid).
	Load func() (config.Config, error)
}

// Sink receives every kept event, in order, after it is stored (the
// daemon's metrics): quick, on the publishing path, never publishing.
type Sink = event.Sink

// Runtime is an opened Ava: every surface's one way in. It is safe for
// concurrent use. Close it to stop the subagents and flush everything.
type Runtime struct {
	in *app.Instance
	// attachments are the files people attach to messages (nil when
	// read-only).
	attachments *attach.Store
	// load reads the configuration again (Options.Load).
	load func() (config.Config, error)
}

// Open opens a Runtime: the store, the audit log, the event hub, the
// tools, the subagent manager and, unless ReadOnly, the session service.
// It never returns a partly opened runtime: on error everything it opened
// is closed again and the error names the part and the cause. Options
// without a data root is ErrInvalid, saying where one comes from.
func Open(ctx context.Context, opt Options) (*Runtime, error) {
	if opt.Config.DataRoot == "" {
		return nil, invalidf("open: Options.Config.DataRoot is empty: load the configuration with config.Load(os.Getenv) " +
			"(AVA_DATA_ROOT, by default $XDG_DATA_HOME/ava), or set DataRoot to a folder of your program's")
	}
	opts := []app.Option{app.WithVersion(Version())}
	for _, s := range opt.Sinks {
		opts = append(opts, app.WithSink(s))
	}
	if opt.ReadOnly {
		opts = append(opts, app.ReadOnly())
	}
	if len(opt.Tools) > 0 {
		opts = append(opts, app.WithTools(opt.Tools...))
	}
	if len(opt.Roles) > 0 {
		opts = append(opts, app.WithRoles(opt.Roles...))
	}
	in, err := app.Open(ctx, opt.Config, opt.Logger, opts...)
	if err != nil {
		return nil, err
	}
	r := &Runtime{in: in, load: opt.Load, attachments: in.Attachments}
	return r, nil
}

// Close stops the sessions and subagents (what still runs is recorded as
// interrupted) and flushes and closes everything, the store last.
// Closing a nil Runtime does nothing.
func (r *Runtime) Close() error {
	if r == nil {
		return nil
	}
	return r.in.Close()
}

// Config is the configuration the runtime was opened with.
func (r *Runtime) Config() config.Config { return r.in.Config }

// Logger is the runtime's logger.
func (r *Runtime) Logger() *slog.Logger { return r.in.Log }

// Redactor is the runtime's one redactor: the store, the event hub and
// everything the runtime returns are masked with it. A surface that
// shows text of its own making (an error it wraps) may mask it too.
func (r *Runtime) Redactor() *redact.Redactor { return r.in.Redactor }

// RoleErrors are the role files that could not be loaded.
func (r *Runtime) RoleErrors() []error { return r.in.CurrentRoleErrors() }

// StopTaking makes a cluster worker stop taking new runs from the job
// queue (the first step of a shutdown); it does nothing elsewhere.
func (r *Runtime) StopTaking() { r.in.StopTaking() }

// EndInterruptedTurns ends, as interrupted, the orchestrator turns a
// process that stopped left open, in the most recently active main
// sessions. Call it before the runtime takes messages. It returns how many
// it ended.
func (r *Runtime) EndInterruptedTurns(ctx context.Context) (int, error) {
	return r.in.EndInterruptedTurns(ctx)
}

// SweepReports makes, now and with every recovery sweep until Close,
// the reports sessions are owed of their background subagents' results
// that no process made (its process stopped first): a daemon calls it
// once it takes messages. A read-only runtime has nothing to sweep.
func (r *Runtime) SweepReports() {
	if r.in.Sessions != nil {
		r.in.Sessions.SweepReports(r.in.Config.RecoverEvery)
	}
}

// Ping checks that the store answers (a daemon's /readyz).
func (r *Runtime) Ping(ctx context.Context) error {
	if p, ok := r.in.Store.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	return nil
}

// Tracing reports whether OpenTelemetry tracing is on (OTEL_*): a
// surface then continues its callers' traces (W3C traceparent).
func (r *Runtime) Tracing() bool { return r.in.Tracing != nil }

// Tool is a tool a model can call (package tool): an embedding program
// implements it to give its roles tools of its own.
type Tool = tool.Tool

// Instance is the assembled parts behind the runtime (package app): for
// Ava's own tests and tools that must reach beneath the core. It is not
// part of the stable API, and no surface calls it (a test keeps them
// off it).
func (r *Runtime) Instance() *app.Instance { return r.in }

// Counts are the subagents running and queued in this process.
func (r *Runtime) Counts() (running, queued int) { return r.in.Subagent.Counts() }

// ToolResult is what a tool call gives back to the model: the text it
// reads, and whether the call failed.
type ToolResult = tool.Result

// NewTool makes a Tool of a Go function: its JSON Schema is derived
// from Args (json tags name the fields, jsonschema tags describe them,
// fields without omitempty are required), and the model's arguments are
// checked against it before fn runs. It panics when Args cannot be
// described by a JSON Schema, a programming error any test finds.
func NewTool[Args any](name, description string, fn func(ctx context.Context, args Args) (ToolResult, error)) Tool {
	return tool.NewFunc(name, description, fn)
}
