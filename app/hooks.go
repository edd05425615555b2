package app

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/hooks"
	"github.com/avaagent/ava/hookspec"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/tool/shell"
)

// HookDrain bounds how long Close spends delivering what is due (the
// events of the process's last turns) after its subagents and sessions
// stopped.
const HookDrain = 10 * time.Second

// Hooks are an instance's lifecycle hooks (package hooks): the Router
// the store records deliveries with, and the Dispatcher that delivers
// them (nil when the instance has no hook or is read-only).
type Hooks struct {
	Router     *hooks.Router
	Dispatcher *hooks.Dispatcher
	// Sender makes attempts (also `ava hooks test`'s).
	Sender *hooks.Sender

	// config are config.yaml's hooks and roles each role's: snapshots a
	// reload swaps (setConfig, setRoles).
	config atomic.Pointer[[]hookspec.Spec]
	roles  atomic.Pointer[map[string][]hookspec.Spec]

	stop func()
	done chan struct{}
}

// newHooks returns the hooks of cfg, their roles' still to come
// (setRoles).
func newHooks(cfg config.Config, log *slog.Logger) *Hooks {
	host, _ := os.Hostname()
	h := &Hooks{Sender: hooks.NewSender(hookEnv(), "Ava-Hooks/1")}
	h.config.Store(&cfg.Hooks)
	h.Router = &hooks.Router{Current: h.configHooks, RoleHooks: h.roleHooks, Listening: h.listening, Root: cfg.DataRoot, Host: host, Log: log}
	return h
}

// configHooks are config.yaml's hooks in force.
func (h *Hooks) configHooks() []hookspec.Spec { return *h.config.Load() }

// setConfig replaces config.yaml's hooks (a reload); the dispatcher,
// when running, delivers for the new set from now on.
func (h *Hooks) setConfig(specs []hookspec.Spec) {
	h.config.Store(&specs)
	h.refresh()
}

// refresh gives the running dispatcher every hook in force.
func (h *Hooks) refresh() {
	if h.Dispatcher != nil {
		h.Dispatcher.SetHooks(h.byID())
	}
}

// byID are every hook in force, by ID.
func (h *Hooks) byID() map[string]hookspec.Spec {
	byID := map[string]hookspec.Spec{}
	for _, s := range h.All() {
		byID[s.ID()] = s.Spec
	}
	return byID
}

// listening reports whether any hook is defined, in the config file or
// a role: without one, stored events are not looked at.
func (h *Hooks) listening() bool {
	if len(h.configHooks()) > 0 {
		return true
	}
	m := h.roles.Load()
	return m != nil && len(*m) > 0
}

// hookEnv is a command hook's environment: the allow-list every command
// Ava starts gets (shell.CommandEnv, the one definition MCP servers and
// process tools use: PATH, LANG, LANGUAGE, LC_*, TERM, TZ, NO_COLOR,
// COLORTERM) with the person's HOME and TMPDIR, and nothing else of Ava's
// environment, whatever its names (GITHUB_TOKEN, DB_PASS, …). A hook
// names what more it needs in pass_env (hooks.Sender adds it).
func hookEnv() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/"
	}
	return shell.CommandEnv(os.Environ(), home, os.TempDir())
}

// setRoles records the hooks of the loaded roles.
func (h *Hooks) setRoles(roles map[string]role.Role) {
	m := map[string][]hookspec.Spec{}
	for name, r := range roles {
		if len(r.Hooks) > 0 {
			m[name] = r.Hooks
		}
	}
	h.roles.Store(&m)
	h.refresh()
}

func (h *Hooks) roleHooks(name string) []hookspec.Spec {
	if m := h.roles.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}

// All are every hook of the instance, the config file's first, each
// target once, with where it came from ("config.yaml" or the role's
// name).
func (h *Hooks) All() []HookSource {
	var out []HookSource
	seen := map[string]bool{}
	add := func(from string, hs []hookspec.Spec) {
		for _, s := range hs {
			if !seen[s.ID()] {
				seen[s.ID()] = true
				out = append(out, HookSource{Spec: s.WithDefaults(), From: from})
			}
		}
	}
	add("config.yaml", h.configHooks())
	if m := h.roles.Load(); m != nil {
		names := make([]string, 0, len(*m))
		for n := range *m {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			add("role "+n, (*m)[n])
		}
	}
	return out
}

// HookSource is a hook and where it is defined.
type HookSource struct {
	hookspec.Spec
	From string
}

// start runs the dispatcher until close, also without a hook (a reload
// may add one; with none, it claims nothing and reads no store); owner
// is this process's instance ID as it is now (instance.Instance.ID).
func (h *Hooks) start(ctx context.Context, in *Instance, owner func() string) {
	d := hooks.NewDispatcher(hooks.Options{Store: in.Store, Hooks: h.byID(), Owner: owner, Host: h.Router.Host,
		Sender: h.Sender, Log: in.Log.With("component", "hooks")})
	h.Dispatcher = d
	h.Router.Wake = d.Kick
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.stop, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		d.Run(ctx)
	}()
	var once sync.Once
	in.closers = append(in.closers, func() error {
		once.Do(h.close)
		return nil
	})
}

// close stops the dispatcher, then delivers what is due for at most
// HookDrain: the events of the process's last moments.
func (h *Hooks) close() {
	h.stop()
	<-h.done
	ctx, cancel := context.WithTimeout(context.Background(), HookDrain)
	defer cancel()
	h.Dispatcher.DeliverNow(ctx, nil)
}
