package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/attach"
	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/budget"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/instance"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/ratelimit"
	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tracing"
)

// RoleSkippedMessage is the message of the warning Open logs for each
// role file it could not load (also in Instance.RoleErrors); a caller
// that reports RoleErrors itself can leave these records out.
const RoleSkippedMessage = "role file skipped"

// Instance is an opened Ava: configuration, models, the store, the audit
// log, the event hub, the tools and the subagent manager. Close it to stop
// the subagents and flush everything.
type Instance struct {
	Config config.Config
	// Attachments are the files people attach to messages (nil when
	// read-only): the core stores and reads them, the orchestrators
	// give a model that takes images the attached images.
	Attachments *attach.Store
	Catalog     *llm.Catalog
	// Store is the durable record: the SQLite file in the data root, or
	// the PostgreSQL database of AVA_DATABASE_URL (see openStore).
	Store store.Store
	Audit *audit.Writer
	Hub   *event.Hub
	// Redactor is the one redactor of the instance: the hub masks every
	// event with it and the store every text it writes.
	Redactor *redact.Redactor
	// Tools are the built-in tools (what roles choose from).
	Tools *tool.Registry
	// MCP is the pool of the MCP servers of config.yaml and of the
	// roles (see package mcpclient): started on first use, stopped by
	// Close.
	MCP *mcpclient.Pool
	// Ledger is the live spend of the sessions' turns and subagents:
	// the orchestrator and the subagent manager share it, so that a
	// session's budget is one budget (package budget).
	Ledger   *budget.Ledger
	Subagent *subagent.Manager
	// Observers are the instance's typed observers (package observe):
	// add any number; the subagent manager and the sessions notify them.
	// Close drains them after the sessions and the manager closed, for at
	// most ObserverDrain.
	Observers *observe.Set
	// Sessions runs every turn of every session (see package session);
	// nil when opened ReadOnly.
	Sessions *session.Service
	// Hooks are the lifecycle hooks: the config file's and the data
	// root's roles', recorded with their events and delivered by this
	// process while it runs (see package hooks).
	Hooks *Hooks
	// Tracing is the OpenTelemetry tracer provider, set up from the
	// OTEL_* environment (see package tracing); nil when tracing is off
	// or the instance was opened ReadOnly. Close flushes it last.
	Tracing *tracing.Provider
	// RoleErrors are role files that could not be loaded.
	RoleErrors []error
	Log        *slog.Logger

	// cluster is the process's part in a cluster on PostgreSQL (nil:
	// embedded).
	cluster *clusterNode
	// limits paces the providers' requests (one limiter per key and
	// model, in the cluster's database when there is one).
	limits *ratelimit.Registry
	// self is this process's registration (nil when read-only).
	self *instance.Instance

	// reload is the state of Reload (reload.go).
	reload reloader
	// roleErrs are the role files that do not load now (RoleErrors at
	// the start; a reload's after it).
	roleErrs atomic.Pointer[[]error]

	closers []func() error
}

// Option changes how Open opens an instance.
type Option func(*openOptions)

type openOptions struct {
	readOnly bool
	sinks    []event.Sink
	tools    []tool.Tool
	roles    []role.Role
	// observers are added before anything can notify them.
	observers []observe.Observer
	// version is Ava's version, for the traces (WithVersion).
	version string
}

// WithTools adds an embedding program's tools to the built-in ones: a
// role that names one gets it.
func WithTools(ts ...tool.Tool) Option {
	return func(o *openOptions) { o.tools = append(o.tools, ts...) }
}

// WithRoles adds an embedding program's roles to the built-in ones, with
// the operator's trust (it is the operator's own code). A role file of the
// same name in the data root or a trusted workspace replaces one, as it
// replaces a built-in role.
func WithRoles(rs ...role.Role) Option {
	return func(o *openOptions) { o.roles = append(o.roles, rs...) }
}

// ObserverDrain bounds how long Close lets the observers work through
// their queues.
const ObserverDrain = 10 * time.Second

// WithObserver adds o to the instance's Observers before the subagent
// manager starts, so that it also hears of the runs that Open's
// recovery ends or resumes.
func WithObserver(o observe.Observer) Option {
	return func(oo *openOptions) { oo.observers = append(oo.observers, o) }
}

// WithSink adds a sink that receives every kept event after the audit
// log has (the daemon's metrics). A sink is on the publishing path: it
// must be quick and must not publish.
func WithSink(s event.Sink) Option { return func(o *openOptions) { o.sinks = append(o.sinks, s) } }

// WithVersion gives the instance Ava's version (ava.Version), which its
// traces carry: service.version and the instrumentation scope's version.
func WithVersion(v string) Option { return func(o *openOptions) { o.version = v } }

// ReadOnly opens an instance for looking only (ava roles): it does not
// register this process as an owner of runs, recovers no other process's
// runs and announces nothing. It creates and writes nothing either: no
// data root (a missing one is fine: built-in roles and config only), the
// store opened read-only (sqlite.Options.ReadOnly: a missing or older
// database reads as an empty store; PostgreSQL in read-only
// transactions), and no audit log or session files (the hub has no sinks,
// as nothing publishes).
func ReadOnly() Option { return func(o *openOptions) { o.readOnly = true } }

// Open builds an Instance from a validated cfg, creating the data root.
// Every event published to its Hub is stored and goes to the audit log.
// Unless ReadOnly, this process is registered as an owner of runs (see
// package instance) and the runs of processes that are gone are ended as
// interrupted. When a part cannot be opened, the parts already opened are
// closed again and the error names the path and the cause; Open never
// returns a partly opened Instance.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...Option) (*Instance, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	if log == nil {
		log = slog.Default()
	}
	if !o.readOnly {
		if err := cfg.EnsureDataRoot(); err != nil {
			return nil, err
		}
	}
	in := &Instance{Config: cfg, Log: log}
	if err := in.open(ctx, o); err != nil {
		if cerr := in.Close(); cerr != nil {
			log.Warn("closing after a failed open", "err", cerr)
		}
		return nil, err
	}
	return in, nil
}

// openStore opens the store: PostgreSQL when cfg.DatabaseURL is a
// postgres:// URL, else the SQLite file in the data root.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger, r *redact.Redactor, readOnly bool, outbox store.Outbox) (store.Store, error) {
	if readOnly {
		outbox = nil
	}
	if config.IsPostgresURL(cfg.DatabaseURL) {
		s, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{Logger: log, Redactor: r, ReadOnly: readOnly, Outbox: outbox})
		if err != nil {
			return nil, err
		}
		log.Info("store opened", "backend", "postgres", "database", s.Where())
		return s, nil
	}
	s, err := sqlite.Open(ctx, filepath.Join(cfg.DataRoot, sqlite.FileName), sqlite.Options{Logger: log, Redactor: r, ReadOnly: readOnly, Outbox: outbox})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// open opens the parts of in one after the other, registering each
// closer as soon as its part is open, so that Close undoes exactly what
// was opened.
func (in *Instance) open(ctx context.Context, o openOptions) error {
	cfg, log := in.Config, in.Log
	var err error
	in.limits = ratelimit.NewRegistry(cfg.RateLimits, log)
	if in.Catalog, err = catalog(cfg, log, in.limits); err != nil {
		return err
	}
	in.Redactor = NewRedactor(cfg, os.Environ())
	if !o.readOnly {
		// First opened, last closed: the spans of everything closed
		// before it are flushed.
		if in.Tracing, err = tracing.Setup(ctx, tracing.Options{Logger: log, Redact: in.Redactor.String, Version: o.version}); err != nil {
			return err
		}
		if in.Tracing != nil {
			in.closers = append(in.closers, func() error { return in.Tracing.Shutdown(context.Background()) })
		}
	}
	in.Hooks = newHooks(cfg, log)
	if in.Store, err = openStore(ctx, cfg, log, in.Redactor, o.readOnly, in.Hooks.Router.Outbox); err != nil {
		return err
	}
	in.closers = append(in.closers, in.Store.Close)
	if pg, ok := in.Store.(*postgres.Store); ok && !o.readOnly {
		// Every process of the cluster paces a key and model together.
		in.limits.UseBackend(pg.RateLimits())
	}
	sessionFiles, err := in.openSinks(o)
	if err != nil {
		return err
	}
	in.Hub.SetRedactor(in.Redactor)
	if !o.readOnly {
		in.harden()
	}
	if in.Tools, err = tool.NewRegistry(append(in.builtinTools(), o.tools...)...); err != nil {
		return fmt.Errorf("built-in tools: %w", err)
	}
	if in.MCP, err = mcpclient.New(in.mcpOptions(cfg, log)); err != nil {
		return fmt.Errorf("MCP servers (%s): %w", configSource(cfg), err)
	}
	// Closed after the subagents that use its servers have stopped.
	in.closers = append(in.closers, in.MCP.Close)
	in.reload.current, in.reload.library = cfg, o.roles
	roles, roleErrs := in.loadRoles(cfg, in.MCP)
	in.RoleErrors = roleErrs
	in.roleErrs.Store(&roleErrs)
	for _, e := range roleErrs {
		in.reload.status.RoleErrors = append(in.reload.status.RoleErrors, e.Error())
	}
	in.Hooks.setRoles(roles)
	for _, e := range roleErrs {
		log.Warn(RoleSkippedMessage, "err", e)
	}
	for _, r := range role.Sorted(roles) {
		if r.Overrides != "" {
			log.Warn(RoleOverrideMessage, "role", r.Name, "source", r.Source, "replaces", r.Overrides)
		}
	}
	var owner subagent.Owner
	if !o.readOnly {
		self, err := instance.Start(ctx, instance.Options{Store: in.Store, Logger: log, TTL: cfg.LeaseTTL, Heartbeat: cfg.LeaseTTL / 6})
		if err != nil {
			return err
		}
		in.closers = append(in.closers, self.Close)
		owner, in.self = self, self
		in.Hooks.start(ctx, in, self.ID)
	}
	policy, err := confirm.ParsePolicy(cfg.Confirm)
	if err != nil {
		return err
	}
	node, err := in.openCluster(ctx, o)
	if err != nil {
		return err
	}
	if st, ok := in.Store.(*sqlite.Store); ok && !o.readOnly {
		in.startFileRelay(st)
	}
	in.cluster = node
	resumeAttempts := cfg.ResumeAttempts
	if resumeAttempts == 0 {
		resumeAttempts = -1 // AVA_RESUME_ATTEMPTS=0: never resume
	}
	// Closed after the manager and the sessions, whose notices it
	// drains, and before the store, which observers may read.
	in.Observers = observe.New(observe.Options{Logger: log})
	for _, ob := range o.observers {
		in.Observers.Add(ob)
	}
	in.closers = append(in.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), ObserverDrain)
		defer cancel()
		return in.Observers.Close(ctx)
	})
	in.Ledger = budget.NewLedger(in.Store)
	in.Subagent = subagent.NewManager(subagent.Options{Catalog: in.Catalog, Tools: in.Tools, MCPTools: in.roleMCPTools, Search: in.searchFor, Store: in.Store, Hub: in.Hub, Ledger: in.Ledger,
		Roles: roles, MaxConcurrent: cfg.MaxConcurrentSubagents, StallAfter: cfg.StallAfter,
		ProgressAfter: cfg.ProgressAfter, ProgressEvery: cfg.ProgressEvery, WrapUpAt: cfg.WrapUpAt, AskTimeout: cfg.AskTimeout,
		Overflow: subagent.Overflow(cfg.SpawnOverflow), MaxQueued: cfg.MaxQueuedSubagents,
		Workspace: cfg.Workspace, Logger: log, Owner: owner, ReadOnly: o.readOnly, ResumeAttempts: resumeAttempts, LifecycleFiles: lifecycleFiles(sessionFiles),
		Confirm: policy, ConfirmTimeout: cfg.ConfirmTimeout, Tracer: in.Tracing.Tracer(), Redactor: in.Redactor,
		Dispatch: node.Dispatcher(), Worker: node.Runs(), RecoverEvery: cfg.RecoverEvery, Observers: in.Observers})
	// Registered before Start: a Start that fails half way may already
	// have started work that Close must stop.
	in.closers = append(in.closers, node.closer(in.Subagent.Close))
	if err := in.Subagent.Start(ctx); err != nil {
		return fmt.Errorf("start subagent manager: %w", err)
	}
	if err := node.start(ctx, in.Subagent); err != nil {
		return err
	}
	if o.readOnly {
		return nil
	}
	return in.openSessions(ctx)
}

// openSinks opens the audit log and the session files and the hub that
// feeds them, and returns the session files. The hub masks every event
// before its sinks see it, so the audit log and the session files need
// no redactor of their own. A read-only instance gets a hub without
// sinks (nothing publishes) and writes no file: in.Audit and the
// session files are nil.
func (in *Instance) openSinks(o openOptions) (*audit.SessionLogs, error) {
	if o.readOnly {
		in.Hub = event.NewHub(in.Store)
		return nil, nil
	}
	cfg, log := in.Config, in.Log
	var err error
	if in.Audit, err = audit.NewWriter(cfg.DataRoot, audit.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	in.closers = append(in.closers, in.Audit.Close)
	// The audit log and the session files are the hub's sinks, their
	// only writers: every kept event reaches them after it is stored.
	sessionFiles, err := audit.NewSessionLogs(cfg.DataRoot, audit.SessionOptions{})
	if err != nil {
		return nil, fmt.Errorf("open session logs: %w", err)
	}
	in.Hub = event.NewHub(in.Store, append([]event.Sink{in.Audit, sessionFiles}, o.sinks...)...)
	in.Hub.SetTransient(store.Outage)
	return sessionFiles, nil
}

// lifecycleFiles is f as the subagent manager's LifecycleFiles: a nil
// interface when f is nil (read-only), not an interface holding nil.
func lifecycleFiles(f *audit.SessionLogs) subagent.LifecycleFiles {
	if f == nil {
		return nil
	}
	return f
}

// openSessions starts the session service over the opened parts.
func (in *Instance) openSessions(ctx context.Context) error {
	cfg, log := in.Config, in.Log
	def := config.Default()
	attachments, err := attach.New(filepath.Join(cfg.DataRoot, "attachments"),
		int64(cmp.Or(cfg.AttachMaxBytes, def.AttachMaxBytes)), cmp.Or(cfg.AttachMaxFiles, def.AttachMaxFiles))
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	in.Attachments = attachments
	orchTools, err := in.OrchestratorTools(ctx)
	if err != nil {
		return fmt.Errorf("orchestrator tools: %w", err)
	}
	in.Sessions = session.New(session.Config{Hub: in.Hub, Subagents: in.Subagent, Budgets: in.Store, Store: in.Store, Offline: IsOffline,
		CancelSubagentsOnStop: true, Redactor: in.Redactor, Reports: in.Store, OnComplete: cfg.OnComplete, ReportAfter: cfg.RecoverEvery, Observers: in.Observers, MergeWindow: cfg.MergeWindow, OrchestratorAnswers: cfg.AskAnswers == "orchestrator", Logger: log,
		Orchestrator: func(model string, limits session.Limits) (*orchestrator.Orchestrator, llm.Model, error) {
			m, err := OrchestratorModel(cfg, in.Catalog, model)
			if err != nil {
				return nil, m, err
			}
			return orchestrator.New(orchestrator.Config{Model: m, Tools: orchTools, Hub: in.Hub, Sessions: in.Store, Ledger: in.Ledger,
				History: in.History(), Workspace: cfg.Workspace, Offline: IsOffline(m), Logger: log, Limits: limits,
				Tracer: in.Tracing.Tracer(), Events: in.Store, Owner: in.turnOwner(), Images: attachments}), m, nil
		}})
	in.closers = append(in.closers, in.Sessions.Close)
	return nil
}

// turnOwner is the owner recorded in orchestrator turns: this process's
// instance (nil when read-only).
func (in *Instance) turnOwner() orchestrator.Owner {
	if in.self == nil {
		return nil
	}
	return in.self
}

// LibrarySource is the Source of a role an embedding program gave
// (WithRoles).
const LibrarySource = "library"

// addLibraryRoles adds the embedding program's roles to roles where no
// role file replaced a role of that name, with the operator's trust; a
// role without a name or a task-less default is an error, not a panic.
func addLibraryRoles(roles map[string]role.Role, lib []role.Role) []error {
	var errs []error
	for _, r := range lib {
		if strings.TrimSpace(r.Name) == "" {
			errs = append(errs, errors.New("library role: no name"))
			continue
		}
		if prev, ok := roles[r.Name]; ok && prev.Source != role.BuiltinSource {
			continue // a role file replaces it
		}
		r.Source, r.ModelBy, r.Untrusted = LibrarySource, llm.NamedByOperator, false
		if r.Limits == (agent.Limits{}) {
			r.Limits = role.DefaultLimits
		}
		roles[r.Name] = r
	}
	return errs
}

// roleToolKnown reports whether a role file may name the tool: a
// built-in, or one a subagent never gets (the spawn and subagent tools,
// which are not built-ins), so that such a role loads with the tool
// withheld instead of being refused.
func (in *Instance) roleToolKnown(name string) bool {
	_, ok := in.Tools.Get(name)
	return ok || name == subagent.AskUserTool || role.WithheldReason(name) != ""
}

// RoleDirs are where custom roles are found: the data root's agents/
// (the user's own, which may replace a built-in role), then the
// workspace's .ava/agents/, opened beneath the workspace, whose files are
// trusted only as far as the person trusted them, by content
// (config.Config.TrustedWorkspaces, `ava trust`); the others go through
// the workspace gate (role/gate.go).
func RoleDirs(cfg config.Config) []role.Dir {
	var out []role.Dir
	user := filepath.Join(cfg.DataRoot, "agents")
	if st, err := os.Stat(user); err == nil && st.IsDir() {
		out = append(out, role.Dir{Path: user, MayOverride: true})
	}
	if cfg.Workspace == "" {
		return out
	}
	if st, err := os.Lstat(filepath.Join(cfg.Workspace, WorkspaceRoleDir)); err == nil && (st.IsDir() || st.Mode()&os.ModeSymlink != 0) {
		out = append(out, workspaceRoleDir(cfg))
	}
	return out
}

// WorkspaceRoleDir is the workspace's role folder, relative to it.
var WorkspaceRoleDir = filepath.Join(".ava", "agents")

// workspaceRoleDir is the workspace's role folder with the files the
// person trusted in it.
func workspaceRoleDir(cfg config.Config) role.Dir {
	d := role.Dir{Path: WorkspaceRoleDir, Base: cfg.Workspace}
	if t, ok := cfg.WorkspaceTrust(cfg.Workspace); ok {
		d.Trusted = t.Files
		if d.Trusted == nil {
			d.Trusted = map[string]string{}
		}
	}
	return d
}

// WorkspaceTrust is what the person trusted of the workspace and how its
// role files differ from it now: trusted reports whether the workspace
// is trusted at all; changes lists its role files that are new, changed
// or removed since `ava trust` (every file, for an entry with no
// recorded contents); now is every role file's hash, as `ava trust`
// would record it.
func WorkspaceTrust(cfg config.Config, ws string) (trusted bool, changes []config.FileChange, now map[string]string, err error) {
	now, err = role.FileHashes(role.Dir{Path: WorkspaceRoleDir, Base: ws})
	if err != nil {
		return false, nil, nil, err
	}
	t, ok := cfg.WorkspaceTrust(ws)
	if !ok {
		return false, nil, now, nil
	}
	return true, t.Changes(now), now, nil
}

// RoleOverrideMessage is the warning Open logs for each role that
// replaces another of the same name.
const RoleOverrideMessage = "role overridden"

// History is the store-backed session history.
func (in *Instance) History() orchestrator.History {
	return orchestrator.StoreHistory{Store: in.Store}
}

// Close stops the subagents and flushes and closes everything the
// instance opened, in reverse order. Closing a nil Instance does nothing.
func (in *Instance) Close() error {
	if in == nil {
		return nil
	}
	var errs []error
	for i := len(in.closers) - 1; i >= 0; i-- {
		if err := in.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	in.closers = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close ava: %w", err)
	}
	return nil
}

// NewRedactor returns the redactor of an instance with configuration cfg
// in the environment environ (os.Environ's form): it masks the
// configured keys and tokens, the values of secret-looking variables and
// the passwords of URLs in environ, and every credential format the
// redact package knows.
func NewRedactor(cfg config.Config, environ []string) *redact.Redactor {
	return redact.New(redact.Options{Secrets: cfg.Secrets(), Environ: environ})
}
