package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/subagent"
)

// Reloaded is what a reload changed.
type Reloaded struct {
	// Changes are the settings of config.yaml that differ from what
	// ran before, each marked applied or needing a restart.
	Changes []config.Change
	// RolesAdded, RolesRemoved and RolesChanged name the roles whose
	// definition is new, gone or different.
	RolesAdded, RolesRemoved, RolesChanged []string
	// MCPServers are the MCP servers added, changed or removed.
	MCPServers []string
	// RoleErrors are role files that did not load (each keeps its
	// previous version, when it had one).
	RoleErrors []error
}

// Empty reports whether the reload changed nothing.
func (r Reloaded) Empty() bool {
	return len(r.Changes) == 0 && len(r.RolesAdded)+len(r.RolesRemoved)+len(r.RolesChanged)+len(r.MCPServers) == 0
}

// ReloadStatus is how the configuration in force stands against the
// files: the last reload's error (until one succeeds) and the changed
// settings that need a restart (until the process restarts or they are
// changed back).
type ReloadStatus struct {
	// Error is why the last reload changed nothing ("" when it
	// worked), with the file, line and setting where they are known;
	// ErrorAt is when it failed.
	Error   string
	ErrorAt time.Time
	// RoleErrors are the role files that do not load now.
	RoleErrors []string
	// Restart are the changes that wait for a restart, as
	// config.Change.String says them.
	Restart []string
	// ReloadedAt is when the configuration was last applied (zero:
	// never since the start).
	ReloadedAt time.Time
}

// ReloadHook prepares a part of a surface (a chat channel's
// allow-list) for a configuration read again: it checks cfg and returns
// how to apply it, or an error that stops the whole reload. Apply runs
// only when every part checked out; it must not fail.
type ReloadHook func(cfg config.Config) (apply func(), err error)

// reloader is the instance's reload state.
type reloader struct {
	// mu serializes reloads; current is the configuration last applied.
	mu      sync.Mutex
	current config.Config
	hooks   []ReloadHook
	// library are the embedding program's roles, added again to every
	// reload's.
	library []role.Role
	status  ReloadStatus
	// statusMu guards status (read by /readyz while a reload runs).
	statusMu sync.Mutex
}

// OnReload adds a part that checks and applies a reloaded
// configuration (see ReloadHook).
func (in *Instance) OnReload(h ReloadHook) {
	in.reload.mu.Lock()
	defer in.reload.mu.Unlock()
	in.reload.hooks = append(in.reload.hooks, h)
}

// ReloadStatus returns how the configuration in force stands.
func (in *Instance) ReloadStatus() ReloadStatus {
	in.reload.statusMu.Lock()
	defer in.reload.statusMu.Unlock()
	s := in.reload.status
	s.RoleErrors, s.Restart = slices.Clone(s.RoleErrors), slices.Clone(s.Restart)
	return s
}

// setStatus changes the reload status under its lock.
func (in *Instance) setStatus(f func(s *ReloadStatus)) {
	in.reload.statusMu.Lock()
	defer in.reload.statusMu.Unlock()
	f(&in.reload.status)
}

// Reload reads the configuration again with load (config.yaml, the
// environment, the process's flags) and applies it, with the role files
// as they are now,
// to the running instance, after checking all of it: a configuration
// that does not load or validate, an MCP server that does not check out or a
// ReloadHook's error changes nothing and is returned (and kept in
// ReloadStatus until a reload works). Applied: the roles (new spawns get
// them; runs going keep theirs), config.yaml's hooks and the roles',
// the MCP servers, the limits on running and queued subagents and the
// overflow policy, the confirmation policy and its wait, and what the
// ReloadHooks apply (settings config.Settings marks Reloads). Any other
// changed setting is reported as needing a restart. Reloads are
// serialized.
func (in *Instance) Reload(ctx context.Context, load func() (config.Config, error)) (Reloaded, error) {
	if in.Sessions == nil {
		return Reloaded{}, errors.New("reload: this instance was opened read-only")
	}
	in.reload.mu.Lock()
	defer in.reload.mu.Unlock()
	var out Reloaded
	cfg, err := load()
	var apply func()
	if err == nil {
		apply, err = in.prepareReload(cfg, &out)
	}
	if err != nil {
		in.Log.Error("configuration not reloaded: the running configuration stays; fix the file and save it again (or run ava reload)", "err", err)
		in.setStatus(func(s *ReloadStatus) { s.Error, s.ErrorAt = err.Error(), time.Now() })
		return Reloaded{}, err
	}
	apply()
	in.reload.current = cfg
	in.roleErrs.Store(&out.RoleErrors)
	restart := in.restartChanges(cfg)
	var roleErrs []string
	for _, e := range out.RoleErrors {
		roleErrs = append(roleErrs, e.Error())
		in.Log.Warn("role file not reloaded: its previous version stays, if it had one", "err", e)
	}
	in.setStatus(func(s *ReloadStatus) {
		s.Error, s.ErrorAt, s.RoleErrors, s.Restart, s.ReloadedAt = "", time.Time{}, roleErrs, restart, time.Now()
	})
	for _, c := range out.Changes {
		if !c.Reload {
			in.Log.Warn("setting changed; it takes effect only when the daemon restarts", "setting", c.Key, "change", c.String())
		}
	}
	if !out.Empty() {
		in.Log.Info("configuration reloaded", "changes", changeKeys(out.Changes), "roles_added", out.RolesAdded,
			"roles_removed", out.RolesRemoved, "roles_changed", out.RolesChanged, "mcp_servers", out.MCPServers)
	}
	return out, nil
}

// restartChanges are the changes of cfg against the configuration the
// process started with that wait for a restart (caller holds reload.mu).
func (in *Instance) restartChanges(cfg config.Config) []string {
	var out []string
	for _, c := range config.Changes(in.Config, cfg) {
		if !c.Reload || (c.Key == "max_concurrent_subagents" && in.cluster != nil) {
			c.Reload = false
			out = append(out, c.String())
		}
	}
	return out
}

func changeKeys(cs []config.Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Key)
	}
	return out
}

// prepareReload checks cfg and the role files, fills out with what
// would change and returns how to apply it; it changes nothing itself
// (caller holds reload.mu). Applying fills out.MCPServers.
func (in *Instance) prepareReload(cfg config.Config, out *Reloaded) (func(), error) {
	if err := cfg.Validate(); err != nil {
		return nil, config.Locate(cfg.Source, err)
	}
	policy, err := confirm.ParsePolicy(cfg.Confirm)
	if err != nil {
		return nil, err
	}
	// The workspace and the data root are the process's: roles are
	// looked for where they were at the start.
	cfg.Workspace, cfg.DataRoot = in.Config.Workspace, in.Config.DataRoot
	staged, err := mcpclient.New(in.mcpOptions(cfg, in.Log))
	if err != nil {
		return nil, fmt.Errorf("MCP servers (%s): %w", configSource(cfg), err)
	}
	// staged only holds definitions: nothing in it ever starts.
	defer staged.Close()
	roles, roleErrs := in.loadRoles(cfg, staged)
	out.RoleErrors = roleErrs
	old := in.Subagent.Roles()
	in.keepBroken(old, roles, roleErrs, staged)
	out.RolesAdded, out.RolesRemoved, out.RolesChanged = roleDiff(old, roles)
	var applies []func()
	for _, h := range in.reload.hooks {
		apply, err := h(cfg)
		if err != nil {
			return nil, err
		}
		applies = append(applies, apply)
	}
	out.Changes = config.Changes(in.reload.current, cfg)
	specs := staged.Specs()
	return func() {
		out.MCPServers = in.MCP.Replace(specs)
		in.Subagent.SetRoles(roles)
		in.Hooks.setConfig(cfg.Hooks)
		in.Hooks.setRoles(roles)
		maxConcurrent := cfg.MaxConcurrentSubagents
		if in.cluster != nil {
			maxConcurrent = 0 // the cluster's workers are counted at start
		}
		in.Subagent.SetLimits(maxConcurrent, cfg.MaxQueuedSubagents, subagent.Overflow(cfg.SpawnOverflow))
		in.Subagent.SetConfirm(policy, cfg.ConfirmTimeout)
		for _, a := range applies {
			a()
		}
	}, nil
}

// keepBroken keeps, for each role file that did not load, the role it
// gave before (its server definitions with it), so that a bad edit of a
// role file leaves the role as it ran.
func (in *Instance) keepBroken(old, roles map[string]role.Role, errs []error, staged *mcpclient.Pool) {
	for _, e := range errs {
		var fe *role.FileError
		if !errors.As(e, &fe) {
			continue
		}
		for name, r := range old {
			if r.Source != fe.Path {
				continue
			}
			if _, taken := roles[name]; taken {
				continue
			}
			for _, sp := range r.MCPServers {
				if !sp.IsRef() {
					_ = staged.Add(sp)
				}
			}
			roles[name] = r
		}
	}
}

// loadRoles loads the roles of cfg's role folders with the embedding
// program's, and checks their MCP servers against pool (adding the
// roles' own definitions to it).
func (in *Instance) loadRoles(cfg config.Config, pool *mcpclient.Pool) (map[string]role.Role, []error) {
	roles, errs := role.LoadDirs(RoleDirs(cfg), in.roleToolKnown)
	errs = append(errs, addLibraryRoles(roles, in.reload.library)...)
	errs = append(errs, in.addRoleMCPServers(cfg, pool, roles)...)
	return roles, errs
}

// roleDiff names the roles added, removed and changed from old to new,
// each sorted.
func roleDiff(old, new map[string]role.Role) (added, removed, changed []string) {
	for _, name := range slices.Sorted(maps.Keys(new)) {
		prev, ok := old[name]
		switch {
		case !ok:
			added = append(added, name)
		case !reflect.DeepEqual(prev, new[name]):
			changed = append(changed, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old)) {
		if _, ok := new[name]; !ok {
			removed = append(removed, name)
		}
	}
	return added, removed, changed
}

// CurrentRoleErrors are the role files that do not load now: Open's
// RoleErrors, then the last reload's.
func (in *Instance) CurrentRoleErrors() []error { return *in.roleErrs.Load() }
