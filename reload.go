package ava

import (
	"context"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
)

// Reloaded is what a reload changed: the settings (each applied or
// needing a restart), the roles added, removed and changed, the MCP
// servers added, changed or removed, and the role files that did not
// load.
type Reloaded = app.Reloaded

// ReloadStatus is how the configuration in force stands against the
// files: the last reload's error until one works, the role files that
// do not load, and the changed settings that wait for a restart.
type ReloadStatus = app.ReloadStatus

// ConfigChange is one changed setting (config.Change).
type ConfigChange = config.Change

// ReloadHook checks a configuration read again for a part of a surface
// (a chat channel's allow-list) and returns how to apply it; its error
// stops the whole reload (app.ReloadHook).
type ReloadHook = app.ReloadHook

// Reload reads the configuration again (Options.Load) with the role
// files as they are now, checks all of it and applies what may change
// while the runtime runs (config.Setting.Reloads; roles, hooks, MCP
// servers). A configuration that does not load or validate changes
// nothing: the error (ErrInvalid) says the file, line and setting, and
// ReloadStatus keeps it until a reload works. Runs already going keep
// their roles. ErrInvalid without Options.Load, ErrReadOnly when opened
// read-only.
func (r *Runtime) Reload(ctx context.Context) (Reloaded, error) {
	if err := r.writable(); err != nil {
		return Reloaded{}, err
	}
	if r.load == nil {
		return Reloaded{}, invalidf("reload: this runtime was opened without Options.Load, so it cannot read its configuration again")
	}
	out, err := r.in.Reload(ctx, r.load)
	if err != nil {
		return out, invalidf("%s", r.in.Redactor.String(err.Error()))
	}
	return out, nil
}

// WatchConfig reloads (Reload) whenever config.yaml or a role file
// changes, an editor's several writes counting as one change, until ctx
// ends. It returns an error only when watching cannot start.
func (r *Runtime) WatchConfig(ctx context.Context) error {
	if err := r.writable(); err != nil {
		return err
	}
	if r.load == nil {
		return invalidf("watch: this runtime was opened without Options.Load, so it cannot read its configuration again")
	}
	return r.in.Watch(ctx, r.load)
}

// ReloadStatus returns how the configuration in force stands against
// the files (a daemon's /readyz and the panel show it), masked.
func (r *Runtime) ReloadStatus() ReloadStatus {
	s := r.in.ReloadStatus()
	s.Error = r.in.Redactor.String(s.Error)
	for i, e := range s.RoleErrors {
		s.RoleErrors[i] = r.in.Redactor.String(e)
	}
	return s
}

// OnReload adds a part that checks and applies a configuration read
// again (a chat channel's allow-list).
func (r *Runtime) OnReload(h ReloadHook) { r.in.OnReload(h) }
