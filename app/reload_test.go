package app_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
)

// TestWatchReloadsAndStopsWithItsContext: the watcher applies a role
// file added while spawns read the roles (the swap is atomic: -race), a
// bad config.yaml keeps the roles and settings in force and is reported
// with its line until fixed, and Watch returns when its context ends
// (goleak in TestMain checks nothing is left).
func TestWatchReloadsAndStopsWithItsContext(t *testing.T) {
	root := t.TempDir()
	in := openAt(t, root, "")
	load := func() (config.Config, error) {
		env := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_CONFIRM": "never"}
		return config.Load(func(k string) string { return env[k] })
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Watch(ctx, load) }()
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for ctx.Err() == nil {
				_ = in.Roles()
				_ = in.Hooks.All()
				time.Sleep(time.Millisecond)
			}
		})
	}
	hasRole := func(name string) bool {
		return slices.ContainsFunc(in.Roles(), func(r app.Role) bool { return r.Name == name })
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("never happened: %s (status %+v)", what, in.ReloadStatus())
	}
	time.Sleep(100 * time.Millisecond) // the watcher is set up
	must(t, os.MkdirAll(filepath.Join(root, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "agents", "pricing.md"),
		[]byte("---\nname: pricing_analyst\ndescription: Prices.\ntools: [read_file]\n---\nbe brief\n"), 0o600))
	waitFor("the role added", func() bool { return hasRole("pricing_analyst") })

	// A role file broken by an edit keeps the role as it ran.
	must(t, os.WriteFile(filepath.Join(root, "agents", "pricing.md"),
		[]byte("---\nname: pricing_analyst\ntools: [teleport]\n---\n"), 0o600))
	waitFor("the broken role file reported", func() bool { return len(in.ReloadStatus().RoleErrors) == 1 })
	if !hasRole("pricing_analyst") {
		t.Error("a broken role file dropped the role it defined")
	}

	cfgPath := filepath.Join(root, config.FileName)
	must(t, os.WriteFile(cfgPath, []byte("max_concurrent_subagents: 5\nmax_queued_subagents: -1\n"), 0o600))
	waitFor("the bad edit reported with its line", func() bool {
		return strings.Contains(in.ReloadStatus().Error, "max_queued_subagents (line 2 of "+cfgPath+")")
	})
	if !hasRole("pricing_analyst") {
		t.Error("a bad config.yaml dropped the roles in force")
	}
	must(t, os.WriteFile(cfgPath, []byte("max_concurrent_subagents: 5\nstall_after: 1m\n"), 0o600))
	waitFor("the fix clears the error and the restart-only change is listed", func() bool {
		s := in.ReloadStatus()
		return s.Error == "" && slices.Equal(s.Restart, []string{"changed `stall_after` needs a restart"})
	})
	cancel()
	readers.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return when its context ended")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
