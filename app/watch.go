package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/avaagent/ava/config"
)

// WatchDebounce is how long the watcher waits after a change for the
// next one before it reloads: an editor's several writes of one save
// (a temporary file, a rename, a chmod) make one reload.
const WatchDebounce = 300 * time.Millisecond

// Watch reloads the configuration (Reload with load) whenever
// config.yaml or a role file changes: it watches the data root (where
// config.yaml is replaced by an editor's rename, and agents/ may
// appear), the data root's agents/, and the workspace's .ava/agents/
// when it exists at the start. It returns when ctx ends, with its
// watcher closed; an error only when watching cannot start.
func (in *Instance) Watch(ctx context.Context, load func() (config.Config, error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch the configuration: %w", err)
	}
	defer w.Close()
	root := in.Config.DataRoot
	agents := filepath.Join(root, "agents")
	dirs := []string{root, agents}
	if ws := in.Config.Workspace; ws != "" {
		dirs = append(dirs, filepath.Join(ws, WorkspaceRoleDir))
	}
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			if err := w.Add(d); err != nil {
				return fmt.Errorf("watch %s: %w", d, err)
			}
		}
	}
	watched := func(name string) bool {
		dir := filepath.Dir(name)
		return (dir == root && (filepath.Base(name) == config.FileName || name == agents)) || dir != root
	}
	var fire <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if !watched(ev.Name) {
				continue
			}
			if ev.Name == agents && ev.Has(fsnotify.Create) {
				_ = w.Add(agents) // the role folder appeared: watch it too
			}
			if timer == nil {
				timer = time.NewTimer(WatchDebounce)
			} else {
				timer.Reset(WatchDebounce)
			}
			fire = timer.C
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			in.Log.Warn("watching the configuration files", "err", err)
		case <-fire:
			fire = nil
			_, _ = in.Reload(ctx, load) // Reload logs and records how it went
		}
	}
}
