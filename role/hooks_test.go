package role_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/role"
)

const hookedRole = `---
name: notifier
description: Tells the person.
tools: [web_search]
hooks:
  - events: [subagent:complete, question]
    command: ["/bin/true"]
---
Work.
`

// A data-root role may have hooks (its subagents' events only); a
// workspace's role file with hooks is skipped, trusted or not.
func TestRoleHooksOnlyFromTheDataRoot(t *testing.T) {
	data, ws := t.TempDir(), t.TempDir()
	for _, d := range []string{data, ws} {
		if err := os.WriteFile(filepath.Join(d, "notifier.md"), []byte(hookedRole), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roles, errs := role.LoadDirs([]role.Dir{{Path: data, MayOverride: true}}, known)
	if len(errs) != 0 || len(roles["notifier"].Hooks) != 1 || roles["notifier"].Hooks[0].Command[0] != "/bin/true" {
		t.Fatalf("data-root role: %v %+v", errs, roles["notifier"].Hooks)
	}
	for name, trusted := range map[string]map[string]string{"untrusted": nil, "trusted": {filepath.Join(ws, "notifier.md"): "x"}} {
		roles, errs = role.LoadDirs([]role.Dir{{Path: ws, Trusted: trusted}}, known)
		if _, ok := roles["notifier"]; ok || len(errs) != 1 || !errors.Is(errs[0], role.ErrWorkspaceHooks) {
			t.Errorf("%s workspace role with hooks: loaded %v, errors %v", name, ok, errs)
		}
	}
}

func TestRoleHookMistakesAreNamed(t *testing.T) {
	for bad, want := range map[string]string{
		"  - events: [session:idle]\n    command: [\"/bin/true\"]":                        "session:idle and proposal belong in config.yaml",
		"  - events: [subagent:done]\n    command: [\"/bin/true\"]":                       `unknown event "subagent:done"`,
		"  - events: [question]\n    command: [\"notify\"]":                               "absolute path",
		"  - events: [question]\n    url: ftp://x":                                        "not an http or https URL",
		"  - events: [question]\n    url: http://x\n    secret_env: AVA_NOT_SET_ANYWHERE": "AVA_NOT_SET_ANYWHERE is not set",
		"  - events: [question]\n    command: [\"/bin/true\"]\n    pass_env: [\"A-B\"]":   `pass_env: "A-B" is not a variable name`,
		"  - events: [question]\n    url: http://x\n    pass_env: [HOME]":                 "pass_env is for a command",
	} {
		src := strings.Replace(hookedRole, "  - events: [subagent:complete, question]\n    command: [\"/bin/true\"]", bad, 1)
		_, err := role.Parse("r.md", []byte(src), known)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "r.md:5") {
			t.Errorf("%q: %v, want %q at r.md:5", bad, err, want)
		}
	}
}
