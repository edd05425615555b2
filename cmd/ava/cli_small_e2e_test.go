package main_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion: ava --version prints the version the build set with
// -ldflags ("dev" for a build from a checkout), and the daemon's
// /healthz carries the same.
func TestVersion(t *testing.T) {
	out, errOut, code := ava(t, nil, "--version")
	if code != 0 || strings.TrimSpace(out) != "ava dev" {
		t.Fatalf("--version: exit %d\n%s\n%s", code, out, errOut)
	}
	bin := filepath.Join(t.TempDir(), "ava")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/avaagent/ava.version=v9.8.7-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build with a version: %v\n%s", err, b)
	}
	if out, err := exec.Command(bin, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "ava v9.8.7-test" {
		t.Fatalf("--version of a versioned build: %q %v", out, err)
	}
	env, _ := daemonEnv(t)
	saved := avaBin
	avaBin = bin
	d := startDaemon(t, env)
	avaBin = saved
	h, err := d.c.Health(bg(t))
	if err != nil || h.Version != "v9.8.7-test" {
		t.Fatalf("healthz %+v %v", h, err)
	}
}

// TestUsageErrorsPointAtTheSubcommandsHelp: a usage error names the
// --help of the command that failed; --queue with --steer and a
// completion for a shell cobra has no script for are usage errors.
func TestUsageErrorsPointAtTheSubcommandsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run"}, []string{"Run 'ava run --help' for usage."}},
		{[]string{"frobnicate"}, []string{"Run 'ava --help' for usage."}},
		{[]string{"send", "--queue", "--steer", "S-abcdef", "hi"}, []string{"--queue and --steer: give one, not both", "Run 'ava send --help'"}},
		{[]string{"completion", "tcsh"}, []string{`unknown command "tcsh"`, "Run 'ava completion --help'"}},
		{[]string{"status", ""}, []string{"the subagent ID or session key is empty", "ava ps --all", "Run 'ava status --help'"}},
		{[]string{"stop", " "}, []string{"the subagent ID or session key is empty", "Run 'ava stop --help'"}},
		{[]string{"serve", "--role", "bogus"}, []string{`--role "bogus": use gateway, worker or all`, "Run 'ava serve --help'"}},
	} {
		_, errOut, code := ava(t, map[string]string{"AVA_ADDR": "127.0.0.1:1"}, tc.args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: stderr lacks %q\n%s", tc.args, w, errOut)
			}
		}
		if strings.Contains(errOut, "AVA_ROLE") || strings.Contains(errOut, "if any flags in the group") {
			t.Errorf("%q: names what the person did not give\n%s", tc.args, errOut)
		}
	}
	out, _, code := ava(t, nil, "completion")
	if code != 0 || !strings.Contains(out, "bash") {
		t.Fatalf("completion alone: exit %d\n%s", code, out)
	}
}

// TestUnknownAndEmptyIDsAreUsageErrors: ava status, send and stop with
// an ID the daemon does not know, or only its prefix, exit 2 with a
// clear error, not a 500 or "no route".
func TestUnknownAndEmptyIDsAreUsageErrors(t *testing.T) {
	env, _ := daemonEnv(t)
	d := startDaemon(t, env)
	for _, args := range [][]string{
		{"status", "S-"}, {"status", "S-ffffff"}, {"send", "S-ffffff", "hi"}, {"stop", "S-ffffff"}, {"status", ""},
	} {
		cmd := exec.Command(avaBin, args...)
		cmd.Env = append(env, "AVA_ADDR="+d.addr)
		_, errOut, code := runCmd(t, cmd)
		if code != 2 || strings.Contains(errOut, "500") || strings.Contains(errOut, "no route") ||
			!strings.Contains(errOut, "ava ps --all") || !strings.Contains(errOut, "Run 'ava "+args[0]+" --help'") {
			t.Errorf("%q: exit %d\n%s", args, code, errOut)
		}
	}
}

// TestServeSaysTheAddressIsInUse: a port another program holds, and one
// an Ava daemon holds, are said plainly with what to do.
func TestServeSaysTheAddressIsInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	env, _ := daemonEnv(t)
	cmd := exec.Command(avaBin, "serve", "--addr", ln.Addr().String())
	cmd.Env = env
	_, errOut, code := runCmd(t, cmd)
	if code != 1 || !strings.Contains(errOut, "address "+ln.Addr().String()+" is already in use") ||
		!strings.Contains(errOut, "another program listens there") || !strings.Contains(errOut, "--addr") {
		t.Fatalf("port in use: exit %d\n%s", code, errOut)
	}
	d := startDaemon(t, env)
	env2, _ := daemonEnv(t)
	cmd = exec.Command(avaBin, "serve", "--addr", strings.TrimSuffix(d.addr, "/"))
	cmd.Env = env2
	_, errOut, code = runCmd(t, cmd)
	if code != 1 || !strings.Contains(errOut, "is already in use: an Ava daemon (dev) already runs there") ||
		!strings.Contains(errOut, "ava ps") {
		t.Fatalf("port of a daemon: exit %d\n%s", code, errOut)
	}
}
