package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/hooks"
	"github.com/avaagent/ava/hookspec"
)

// TestCommandHookGetsAnAllowList: a command hook gets the allow-list of
// Ava's environment every command gets (PATH, LANG, …, HOME) and the
// variables its pass_env names, and none of the rest, however its
// names look: not GITHUB_TOKEN, not DB_PASS, not an unremarkable one.
func TestCommandHookGetsAnAllowList(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_hooksmustnotsee")
	t.Setenv("DB_PASS", "hunter2")
	t.Setenv("AVA_TEST_PLAIN", "plain")
	t.Setenv("AVA_TEST_WANTED", "wanted")
	t.Setenv("LANG", "C.UTF-8")
	in := open(t)
	out := filepath.Join(t.TempDir(), "env")
	spec := hookspec.Spec{Events: []string{hookspec.SubagentStart}, Command: []string{"/bin/sh", "-c", "env > " + out},
		PassEnv: []string{"AVA_TEST_WANTED"}}
	if err := spec.Validate(nil); err != nil {
		t.Fatal(err)
	}
	if err := in.Hooks.Sender.Send(t.Context(), hooks.Attempt{Spec: spec, Event: hookspec.SubagentStart, Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := "\n" + string(b)
	for _, want := range []string{"\nPATH=", "\nHOME=", "\nTMPDIR=", "\nLANG=C.UTF-8", "\nAVA_TEST_WANTED=wanted", "\nAVA_HOOK_EVENT=subagent:start"} {
		if !strings.Contains(env, want) {
			t.Errorf("the hook's environment lacks %q:%s", strings.TrimSpace(want), env)
		}
	}
	for _, leak := range []string{"ghp_hooksmustnotsee", "hunter2", "AVA_TEST_PLAIN", "AVA_DATA_ROOT"} {
		if strings.Contains(env, leak) {
			t.Errorf("the hook's environment holds %q:%s", leak, env)
		}
	}
}
