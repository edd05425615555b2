package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// attackControl tries every way to change the workspace's control
// entries from inside; each success prints a line with "BROKE".
const attackControl = `try() { if eval "$1" 2>/dev/null; then echo "BROKE: $1"; fi; }
try 'echo "[core] fsmonitor = touch /tmp/pwned" >> .git/config'
try 'printf "x" > .git/HEAD'
try 'mkdir -p .git/hooks && echo "#!/bin/sh" > .git/hooks/pre-commit'
try 'mkdir -p .ava/agents && echo evil > .ava/agents/code_reviewer.md'
try 'echo evil > .ava/agents/x.md'
try 'echo evil >> .envrc'
try 'echo evil >> .gitmodules'
try 'mkdir -p .vscode && echo "{}" > .vscode/tasks.json'
try 'mv .git moved-git'
try 'mv .ava moved-ava && mkdir .ava'
try 'rm -rf .git'
try 'rm -f .envrc'
try 'mkdir fresh && mv -T fresh .ava'
try 'mkdir fresh2 && mv -T fresh2 .git'
try 'ln -sfn /tmp .git'
try 'ln -sfn /tmp .ava'
try 'echo evil > f && mv -f f .gitmodules'
try 'mv "$PWD" "$PWD.moved"'
try 'echo evil >> repo/.git/config'
try 'mv repo/.git repo/moved-git'
try 'cd .. && mv "$OLDPWD" moved-ws'
echo normal > normal.txt && mkdir -p sub && echo x > sub/f && mv normal.txt renamed.txt && rm sub/f && echo NORMAL-OK
exit 0`

// The workspace's control entries stay read-only to a command in a
// writable workspace: nothing in them can be written, created, removed,
// renamed or swapped, and .ava, .git and .vscode cannot be created where
// missing, while other files stay writable. A missing .envrc or
// .gitmodules may be created (no placeholder: see controlEntries).
func TestControlEntriesAreReadOnly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ws string)
	}{
		{"existing", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{
				".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/README": "hooks",
				".ava/agents/code_reviewer.md": "reviewer", ".envrc": "export A=1\n", ".gitmodules": "",
				".vscode/settings.json": "{}", "repo/.git/config": "[core]\n", "repo/main.go": "package main\n",
			})
		}},
		{"missing", func(t *testing.T, ws string) {}},
		{"git-file", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{".git": "gitdir: /elsewhere/.git/worktrees/x\n"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			tc.setup(t, ws)
			before := snapshot(t, ws)
			ex, out := runIn(t, Spec{Workspace: ws, Argv: []string{"bash", "-c", attackControl}})
			t.Logf("exit %+v, output:\n%s", ex, out)
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "BROKE") && !creatable(line, before) {
					t.Errorf("a control entry was changed from inside the sandbox: %s", line)
				}
			}
			if !strings.Contains(out, "NORMAL-OK") {
				t.Error("ordinary files were not writable")
			}
			after := snapshot(t, ws)
			for path, content := range after {
				if strings.HasPrefix(path, "sub") || path == "renamed.txt" || path == "fresh" || path == "fresh2" || path == "f" {
					continue
				}
				if b, ok := before[path]; !ok && content != "<dir>" && !creatable(path, before) || ok && b != content {
					t.Errorf("%s changed on the host: %q", path, content)
				}
			}
			for path := range before {
				if _, ok := after[path]; !ok {
					t.Errorf("%s removed on the host", path)
				}
			}
		})
	}
}

// A control entry that is a symbolic link cannot be kept read-only: the
// sandbox refuses to start rather than run unprotected.
func TestControlEntrySymlinkRefused(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "real-git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real-git", filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	c, err := Command(Spec{Workspace: ws, Scratch: t.TempDir(), Dir: ws, Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	_, err = c.Exit()
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("exit error %v, want a refusal naming the symbolic link", err)
	}
}

// creatable reports whether what names .envrc or .gitmodules, which a
// command may create when the workspace had none.
func creatable(what string, before map[string]string) bool {
	for _, name := range []string{".envrc", ".gitmodules"} {
		if _, existed := before[name]; !existed && strings.Contains(what, name) {
			return true
		}
	}
	return false
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot maps every path under root to its content ("<dir>" for a
// folder, "<link>target" for a link).
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "<link>" + target
		case fi.IsDir():
			out[rel] = "<dir>"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// In a real repository, git's reading commands still work inside the
// sandbox with .git read-only; those that write the repository fail.
func TestGitReadsWorkWithReadOnlyGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"main.go": "package main\n"})
	for _, args := range [][]string{{"init", "-q"}, {"add", "main.go"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	script := `echo changed >> main.go
git status --short && git log --oneline | grep -q first && git diff --stat | grep -q main.go && echo GIT-READ-OK
git add main.go 2>/dev/null && echo GIT-ADD-WROTE
exit 0`
	ex, out := runIn(t, Spec{Workspace: ws, Argv: []string{"bash", "-c", script}})
	t.Logf("exit %+v, output:\n%s", ex, out)
	if !strings.Contains(out, "GIT-READ-OK") {
		t.Error("git status, log and diff did not work")
	}
	if strings.Contains(out, "GIT-ADD-WROTE") {
		t.Error("git add wrote the repository's index")
	}
}
