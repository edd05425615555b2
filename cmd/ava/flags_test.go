package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// A limit given explicitly as zero or less is a usage error naming the
// flag, for ava run and ava spawn alike, before anything is opened.
func TestLimitFlagsMustBePositive(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--offline", "--budget", "0", "hi"}, "--budget 0: must be more than zero"},
		{[]string{"run", "--offline", "--budget", "-5", "hi"}, "--budget -5: must be more than zero"},
		{[]string{"run", "--offline", "--max-cost", "-1", "hi"}, "--max-cost -1: must be more than zero"},
		{[]string{"run", "--offline", "--max-cost", "0", "hi"}, "--max-cost 0"},
		{[]string{"run", "--offline", "--max-tokens", "0", "hi"}, "--max-tokens 0"},
		{[]string{"run", "--offline", "--max-iterations", "-2", "hi"}, "--max-iterations -2"},
		{[]string{"run", "--offline", "--timeout", "-1s", "hi"}, "--timeout -1s"},
		{[]string{"run", "--offline", "--timeout", "0", "hi"}, "--timeout 0s"},
		{[]string{"spawn", "--role", "researcher", "--offline", "--wait", "--max-cost", "0", "task"}, "--max-cost 0"},
		{[]string{"spawn", "--role", "researcher", "--offline", "--wait", "--max-tokens", "-10", "task"}, "--max-tokens -10"},
		{[]string{"spawn", "--role", "researcher", "--offline", "--wait", "--max-iterations", "0", "task"}, "--max-iterations 0"},
		{[]string{"spawn", "--role", "researcher", "--offline", "--wait", "--timeout", "-5m", "task"}, "--timeout -5m0s"},
		{[]string{"run", "--model", "bogus", "hi"}, "--model: model \"bogus\" is not provider/model"},
		{[]string{"spawn", "--role", "researcher", "--model", "gpt-5", "--wait", "task"}, "providers: anthropic, openai, openrouter, scripted"},
	}
	for _, c := range cases {
		root := t.TempDir() + "/never"
		app, out, errb := newLogsTestApp(root)
		code := Main(context.Background(), c.args, app)
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("ava %v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
		if out.String() != "" {
			t.Errorf("ava %v printed %q", c.args, out.String())
		}
		if dirExists(root) {
			t.Errorf("ava %v created the data root before refusing its flags", c.args)
		}
	}
}

// Bad flag values of ava logs are usage errors too.
func TestLogsBadFlagValuesExit2(t *testing.T) {
	root, _ := logsFixture(t)
	for _, args := range [][]string{
		{"logs", "--type", "bogus"},
		{"logs", "--last", "-1"},
		{"logs", "--since", "last tuesday"},
		{"logs", "--until", "soon"},
	} {
		app, _, errb := newLogsTestApp(root)
		if code := Main(context.Background(), args, app); code != 2 {
			t.Errorf("ava %v: exit %d, want 2; stderr %q", args, code, errb.String())
		}
	}
}

func dirExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// AVA_MODEL that is not a model name is refused with the providers
// listed, not run on the offline model as scripted/bogus.
func TestBogusModelIsRefused(t *testing.T) {
	root := t.TempDir()
	app, out, errb := newLogsTestApp(root)
	getenv := app.Getenv
	app.Getenv = func(k string) string {
		if k == "AVA_MODEL" {
			return "bogus"
		}
		return getenv(k)
	}
	code := Main(context.Background(), []string{"run", "hi"}, app)
	if code != 1 || out.String() != "" || strings.Contains(errb.String(), "scripted/bogus") ||
		!strings.Contains(errb.String(), `model "bogus" is not provider/model`) || !strings.Contains(errb.String(), "providers: anthropic, openai, openrouter, scripted") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// ava run --yes says what it does: spawns are not confirmed for the run.
func TestRunYesHelpIsHonest(t *testing.T) {
	app, out, errb := newLogsTestApp(t.TempDir())
	if code := Main(context.Background(), []string{"run", "--help"}, app); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var yes string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "--yes") {
			yes = line
		}
	}
	if !strings.Contains(yes, "AVA_CONFIRM=never for this run") || strings.Contains(yes, "no effect") {
		t.Errorf("--yes help: %q", yes)
	}
}

// The shutdown grace comes from the configuration (config.yaml's
// shutdown_grace, AVA_SHUTDOWN_GRACE) and --grace; a bad one is refused
// naming where it came from, before the daemon starts.
func TestServeGraceFromConfig(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(root+"/config.yaml", []byte("shutdown_grace: 0s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--addr", "127.0.0.1:0"}, 1, "shutdown_grace (AVA_SHUTDOWN_GRACE): 0s, must be positive"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--grace", "0s"}, 2, "--grace 0s: want a positive duration"},
		{[]string{"worker", "--grace", "-1s"}, 2, "--grace -1s: want a positive duration"},
	} {
		app, out, errb := newLogsTestApp(root)
		if code := Main(context.Background(), c.args, app); code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("ava %v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
		if strings.Contains(out.String(), "listening") {
			t.Errorf("ava %v started: %q", c.args, out.String())
		}
	}
}
