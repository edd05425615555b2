package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Change is a setting whose value differs between the configuration a
// daemon runs and the one it read again.
type Change struct {
	// Key is the config.yaml key (dotted for a nested one).
	Key string
	// Reload is set when the daemon applies the change without a
	// restart (Setting.Reloads, FileKey.Reload).
	Reload bool
}

// String says what the change means: "changed `addr` needs a restart",
// or "changed `confirm` applied".
func (c Change) String() string {
	if c.Reload {
		return fmt.Sprintf("changed `%s` applied", c.Key)
	}
	return fmt.Sprintf("changed `%s` needs a restart", c.Key)
}

// Changes lists the settings of config.yaml whose values differ between
// old and new, in the order of the reference (Settings, then FileKeys),
// each marked with whether a running daemon applies it. Secrets and
// AVA_DATA_ROOT, which only the environment gives, never differ: a
// process's environment does not change.
func Changes(old, new Config) []Change {
	var out []Change
	for _, s := range settings {
		if s.Key == "" || s.value == nil {
			continue
		}
		if s.value(old) != s.value(new) {
			out = append(out, Change{Key: s.Key, Reload: s.reload})
		}
	}
	for _, k := range fileKeys {
		if !reflect.DeepEqual(k.get(old), k.get(new)) {
			out = append(out, Change{Key: k.Key, Reload: k.Reload})
		}
	}
	return out
}

// trustedValue formats trusted_workspaces (paths and their role files'
// hashes) for Changes; "" when none.
func trustedValue(c Config) string {
	if len(c.TrustedWorkspaces) == 0 {
		return ""
	}
	return fmt.Sprint(c.TrustedWorkspaces)
}

// reloadReference is docs/configuration.md's section on what a running
// daemon applies without a restart, from the marks of Settings and
// FileKeys.
func reloadReference() string {
	var now, restart []string
	for _, s := range settings {
		switch {
		case s.Key == "":
		case s.reload:
			now = append(now, "`"+s.Key+"`")
		default:
			restart = append(restart, "`"+s.Key+"`")
		}
	}
	for _, k := range fileKeys {
		if k.Reload {
			now = append(now, "`"+k.Key+"`")
		} else {
			restart = append(restart, "`"+k.Key+"`")
		}
	}
	return `
## What a running daemon reloads

` + "`ava serve`" + ` reads ` + "`config.yaml`" + ` and the role files again when
they change (the data root's ` + "`agents/`" + `, and the workspace's
` + "`.ava/agents/`" + `; an editor's several writes count as one change), on
SIGHUP, and on ` + "`ava reload`" + ` (` + "`POST /api/reload`" + `). It checks the
whole configuration first: a bad edit changes nothing, and the daemon says
what is wrong (the file, the line, the setting) in its log, in
` + "`GET /readyz`" + ` (` + "`config.error`" + `) and in a banner of the web panel, until an
edit fixes it. A role file that does not load keeps its previous version
(when there was one) and is reported the same way.

Applied at once: roles (new spawns get the new definition, and the orchestrator's spawn_subagent tool lists them from its next model request, in sessions already open too; runs already
going keep the one they started with), ` + strings.Join(now, ", ") + `. A
changed or removed MCP server is stopped (a call in progress on it ends
with an error) and starts again, as defined now, on its next use.

Read only at start: ` + strings.Join(restart, ", ") + `, and every
variable of the environment (` + "`AVA_DATA_ROOT`, `AVA_DATABASE_URL`" + `, the
keys and tokens): a change of one of these is logged and listed in
` + "`GET /readyz`" + ` (` + "`config.restart`" + `: "changed ` + "`addr`" + ` needs a restart")
until the daemon restarts. A variable set in the environment overrides the
file, so editing that key in the file changes nothing.
`
}
