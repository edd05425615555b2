package main_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
)

// pricingRole is a role file the tests add while the daemon runs.
const pricingRole = "---\nname: pricing_analyst\ndescription: Prices things.\ntools: [read_file]\nmodel: haiku\n---\nbe brief\n"

// eventually polls ok every 50 ms for up to 15 s (the watcher's
// debounce and a loaded machine), failing with what.
func eventually(t *testing.T, d *daemon, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("never happened: %s\ndaemon's log:\n%s", what, d.stderr)
}

// spawnRole spawns a QUICK task of role under parent and returns the
// subagent, or the error.
func spawnRole(t *testing.T, d *daemon, parent, role string) (client.Subagent, error) {
	t.Helper()
	sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: role, Task: "QUICK price it", Parent: parent})
	return sa, err
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	must(t, err)
	_, err = f.WriteString(text)
	must(t, err)
	must(t, f.Close())
}

// ready reads the daemon's /readyz.
func ready(t *testing.T, d *daemon) client.Ready {
	t.Helper()
	r, err := d.c.Ready(bg(t))
	must(t, err)
	return r
}

// TestDaemonReloadsChangedFiles: with a daemon running, a role file
// added to the data root can be spawned without a restart; a hook added
// to config.yaml gets a delivery recorded; a broken edit keeps the
// running configuration, and /readyz and ava reload name the file, line
// and setting until it is fixed; a restart-only setting changed is
// reported as such; ava roles and ava hooks show what the daemon runs.
func TestDaemonReloadsChangedFiles(t *testing.T) {
	env, _ := hooksEnv(t)
	data := envValue(env, "AVA_DATA_ROOT")
	cfgPath := filepath.Join(data, "config.yaml")
	d := startDaemon(t, env)
	addr := strings.TrimSuffix(d.addr, "/")
	env = append(env, "AVA_ADDR="+addr)
	first := chatText(t, d.c, client.ChatRequest{Message: "hello"})

	if _, err := spawnRole(t, d, first.Session, "pricing_analyst"); !client.IsStatus(err, http.StatusBadRequest) {
		t.Fatalf("spawn of a role not yet defined: %v, want 400", err)
	}
	must(t, os.MkdirAll(filepath.Join(data, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(data, "agents", "pricing.md"), []byte(pricingRole), 0o600))
	var sa client.Subagent
	eventually(t, d, "the new role spawns", func() bool {
		var err error
		sa, err = spawnRole(t, d, first.Session, "pricing_analyst")
		return err == nil
	})
	waitAll(t, d.c, []job{{id: sa.ID}}, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	out, errOut, code := avaIn(t, env, "roles")
	if code != 0 || !strings.Contains(out, "pricing_analyst") || !strings.Contains(out, "the daemon at "+addr) {
		t.Errorf("ava roles (exit %d) does not show the daemon's roles:\n%s\n%s", code, out, errOut)
	}

	// A hook added to config.yaml hears the next run.
	log := filepath.Join(t.TempDir(), "events.jsonl")
	script := filepath.Join(filepath.Dir(log), "hook.sh")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\ncat >> "+log+"\necho >> "+log+"\n"), 0o700))
	appendFile(t, cfgPath, "hooks:\n  - events: [subagent:complete]\n    command: [\""+script+"\"]\n")
	eventually(t, d, "the daemon runs the new hook", func() bool {
		l, err := d.c.Hooks(bg(t), "all")
		return err == nil && len(l.Hooks) == 1
	})
	sa, err := spawnRole(t, d, first.Session, "pricing_analyst")
	must(t, err)
	waitAll(t, d.c, []job{{id: sa.ID}}, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	eventually(t, d, "a delivery of the new hook is recorded as delivered", func() bool {
		l, err := d.c.Hooks(bg(t), "delivered")
		return err == nil && len(l.Deliveries) > 0
	})
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), sa.ID) {
		t.Errorf("the hook did not get %s's completion: %s", sa.ID, b)
	}
	out, _, _ = avaIn(t, env, "hooks", "--all")
	if !strings.Contains(out, "the daemon at "+addr) || !strings.Contains(out, script) || !strings.Contains(out, "delivered") {
		t.Errorf("ava hooks does not show the daemon's hooks and deliveries:\n%s", out)
	}

	// A broken edit keeps the running configuration and says where.
	good, err := os.ReadFile(cfgPath)
	must(t, err)
	lines := strings.Count(string(good), "\n")
	appendFile(t, cfgPath, "max_queued_subagents: 0\n")
	eventually(t, d, "/readyz names the bad setting", func() bool {
		r := ready(t, d)
		return r.Config != nil && strings.Contains(r.Config.Error, "max_queued_subagents") &&
			strings.Contains(r.Config.Error, "line "+strconv.Itoa(lines+1)+" of "+cfgPath)
	})
	if _, err := spawnRole(t, d, first.Session, "pricing_analyst"); err != nil {
		t.Errorf("the daemon does not run its previous configuration: %v", err)
	}
	_, errOut, code = avaIn(t, env, "reload")
	if code != 1 || !strings.Contains(errOut, "kept its running configuration") || !strings.Contains(errOut, "line "+strconv.Itoa(lines+1)) {
		t.Errorf("ava reload on a bad edit: exit %d, %s", code, errOut)
	}
	if !strings.Contains(d.stderr.String(), "configuration not reloaded") {
		t.Errorf("the daemon's log does not say the reload failed:\n%s", d.stderr)
	}
	must(t, os.WriteFile(cfgPath, good, 0o600))
	eventually(t, d, "the error clears once fixed", func() bool { return ready(t, d).Config == nil })

	// A setting only a restart applies is reported.
	appendFile(t, cfgPath, "stall_after: 5m\n")
	eventually(t, d, "/readyz says stall_after needs a restart", func() bool {
		r := ready(t, d)
		return r.Config != nil && len(r.Config.Restart) == 1 && r.Config.Restart[0] == "changed `stall_after` needs a restart"
	})
}

// TestDaemonReloadsOnSIGHUPAndAvaReload: with the watcher off, a new
// role is not seen until SIGHUP, and the next one until ava reload,
// which says what changed.
func TestDaemonReloadsOnSIGHUPAndAvaReload(t *testing.T) {
	env, _ := hooksEnv(t)
	data := envValue(env, "AVA_DATA_ROOT")
	d := startDaemon(t, env, "--watch=false")
	addr := strings.TrimSuffix(d.addr, "/")
	env = append(env, "AVA_ADDR="+addr)
	first := chatText(t, d.c, client.ChatRequest{Message: "hello"})
	must(t, os.MkdirAll(filepath.Join(data, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(data, "agents", "pricing.md"), []byte(pricingRole), 0o600))
	time.Sleep(time.Second) // what a watcher would have needed
	if _, err := spawnRole(t, d, first.Session, "pricing_analyst"); err == nil {
		t.Fatal("the role was loaded without a reload (--watch=false)")
	}
	must(t, d.cmd.Process.Signal(syscall.SIGHUP))
	eventually(t, d, "SIGHUP loads the role", func() bool {
		_, err := spawnRole(t, d, first.Session, "pricing_analyst")
		return err == nil
	})
	must(t, os.WriteFile(filepath.Join(data, "agents", "auditor.md"),
		[]byte(strings.ReplaceAll(pricingRole, "pricing_analyst", "auditor")), 0o600))
	out, errOut, code := avaIn(t, env, "reload")
	if code != 0 || !strings.Contains(out, "roles added: auditor") {
		t.Fatalf("ava reload: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := spawnRole(t, d, first.Session, "auditor"); err != nil {
		t.Errorf("spawn after ava reload: %v", err)
	}
	select {
	case <-d.done:
		t.Fatalf("the daemon stopped\n%s", d.stderr)
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.c.Health(ctx); err != nil {
		t.Fatal(err)
	}
}
