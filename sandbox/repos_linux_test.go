package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hook writes a pre-commit hook that creates PWNED into dir.
func hook(dir string) string {
	return "printf '#!/bin/sh\\ntouch PWNED\\n' > " + dir + "/pre-commit && chmod +x " + dir + "/pre-commit"
}

// gitRun runs git on the host, as the person would.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// initRepo makes a repository with one commit at dir.
func initRepo(t *testing.T, dir string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{"README": "hello\n"})
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// runBox runs script in a sandbox over ws and returns the command's
// output and the repository changes Ava found.
func runBox(t *testing.T, ws, script string) (string, []RepoChange) {
	t.Helper()
	c, err := Command(Spec{Workspace: ws, Scratch: t.TempDir(), Dir: ws, Argv: []string{"bash", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "GIT_CONFIG_NOSYSTEM=1"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if _, err := c.Exit(); err != nil {
		t.Fatalf("exit: %v (output %q)", err, out.String())
	}
	return out.String(), c.RepoChanges()
}

// Every way a sandboxed command can leave behind a repository whose
// configuration runs a command — renaming a protected repository's
// folder and copying its .git back writable (issue 38, item 1), a new
// repository, a .git pointer file, a bare repository, a repository at
// the workspace's top where there was none, a repository's hooks folder —
// is undone before the person runs git: their real `git status` (and a
// commit, for hooks) in every folder runs nothing the command planted.
func TestPlantedRepositoriesRunNothingOutside(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for this test")
	}
	type attack struct {
		name   string
		setup  func(t *testing.T, ws string)
		script string // PWNED is replaced by the host file the attack would create
		probe  []string
		want   []string // the changes Ava reports, as "what path"
	}
	fsm := `git -C %s config core.fsmonitor "touch PWNED #"`
	for _, a := range []attack{
		{
			name:   "rename a protected repository's folder",
			setup:  func(t *testing.T, ws string) { initRepo(t, filepath.Join(ws, "sub")) },
			script: "mv sub .s && mkdir sub && cp -a .s/.git sub/ && " + strings.ReplaceAll(fsm, "%s", "sub"),
			probe:  []string{"sub", ".s"},
			want:   []string{"replaced sub/.git", "moved .s/.git"},
		},
		{
			name:   "rename a folder two levels above a repository",
			setup:  func(t *testing.T, ws string) { initRepo(t, filepath.Join(ws, "a", "b")) },
			script: "mv a .a && mkdir -p a/b && cp -a .a/b/.git a/b/ && " + strings.ReplaceAll(fsm, "%s", "a/b"),
			probe:  []string{"a/b"},
			want:   []string{"replaced a/b/.git", "moved .a/b/.git"},
		},
		{
			name:   "write an existing repository two levels down",
			setup:  func(t *testing.T, ws string) { initRepo(t, filepath.Join(ws, "a", "b")) },
			script: strings.ReplaceAll(fsm, "%s", "a/b") + "; echo '#!/bin/sh' > a/b/.git/hooks/pre-commit; true",
			probe:  []string{"a/b"},
		},
		{
			name:   "a new repository",
			script: "git init -q docs && " + strings.ReplaceAll(fsm, "%s", "docs"),
			probe:  []string{"docs"},
			want:   []string{"created docs/.git"},
		},
		{
			name:   "a .git pointer file to a bare repository",
			script: "mkdir -p lib && git init -q --bare store/x && git -C store/x config core.bare false && git -C store/x config core.worktree ../../lib && " + strings.ReplaceAll(fsm, "%s", "store/x") + " && echo 'gitdir: ../store/x' > lib/.git",
			probe:  []string{"lib", "store/x"},
			want:   []string{"created lib/.git", "created store/x"},
		},
		{
			name:   "a bare repository at the top of a workspace with no repository",
			script: "git init -q --bare . 2>/dev/null; ls; git --git-dir=. config core.bare false; git --git-dir=. config core.worktree . ; git --git-dir=. config core.fsmonitor 'touch PWNED #'; true",
			probe:  []string{"."},
			want:   []string{"created ."},
		},
		{
			name: "the hooks folder a repository names",
			setup: func(t *testing.T, ws string) {
				initRepo(t, ws)
				writeFiles(t, ws, map[string]string{"tools/hooks/README": "hooks\n"})
				gitRun(t, ws, "config", "core.hooksPath", "tools/hooks")
			},
			script: hook("tools/hooks") + "; mv tools .t && mkdir -p tools/hooks && " + hook("tools/hooks"),
			probe:  []string{"."},
			want:   []string{"replaced tools/hooks"},
		},
		{
			name: "a missing hooks folder a repository names",
			setup: func(t *testing.T, ws string) {
				initRepo(t, ws)
				gitRun(t, ws, "config", "core.hooksPath", ".husky/_")
			},
			script: "mkdir -p .husky/_ && " + hook(".husky/_"),
			probe:  []string{"."},
			want:   []string{"created .husky/_"},
		},
	} {
		t.Run(a.name, func(t *testing.T) {
			ws := t.TempDir()
			if a.setup != nil {
				a.setup(t, ws)
			}
			pwned := filepath.Join(t.TempDir(), "PWNED")
			out, changes := runBox(t, ws, strings.ReplaceAll(a.script, "PWNED", pwned))
			t.Logf("output:\n%s", out)
			var got []string
			for _, c := range changes {
				rel, _ := filepath.Rel(ws, c.Path)
				got = append(got, c.What+" "+rel)
				t.Log(c.String())
				if c.Err != "" {
					t.Errorf("not moved aside: %s", c)
				}
			}
			for _, w := range a.want {
				if !strings.Contains(strings.Join(got, "\n"), w) {
					t.Errorf("changes %q, want one %q", got, w)
				}
			}
			for _, p := range a.probe {
				dir := filepath.Join(ws, p)
				gitRun(t, dir, "status")
				gitRun(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "x", "--allow-empty")
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Fatal("the person's git ran a command the sandboxed command planted")
			}
		})
	}
}

// Ordinary work in a workspace with repositories reports nothing and
// moves nothing: files written, folders made and renamed, a repository
// that existed before left as it was.
func TestOrdinaryWorkMovesNothing(t *testing.T) {
	ws := t.TempDir()
	initRepo(t, ws)
	initRepo(t, filepath.Join(ws, "vendor", "lib"))
	out, changes := runBox(t, ws, "echo x > a.txt && mkdir -p b/c && mv b d && git status --short >/dev/null && echo OK")
	if !strings.Contains(out, "OK") {
		t.Fatalf("output %q", out)
	}
	if len(changes) != 0 {
		t.Fatalf("changes %v, want none", changes)
	}
	if got := gitRun(t, filepath.Join(ws, "vendor", "lib"), "rev-parse", "--git-dir"); strings.TrimSpace(got) != ".git" {
		t.Fatalf("vendor/lib's repository: %q", got)
	}
}

// The configuration reader finds the path-valued keys git would follow.
func TestConfigPaths(t *testing.T) {
	data := []byte(`[core]
	hooksPath = .husky/_ ; comment
	fsmonitor = false
[include]
	path = "../shared.cfg"
[includeIf "gitdir:~/work/"]
	path = work.cfg
[alias] path = not-me
`)
	got := configPaths(data)
	want := []configPath{{"hookspath", ".husky/_"}, {"path", "../shared.cfg"}, {"path", "work.cfg"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// BenchmarkScanRepos measures one listing of a workspace's repository
// markers, which every sandboxed command in a writable workspace costs
// twice (before and after): a tree of 2,000 folders and 20,000 files
// with three repositories.
func BenchmarkScanRepos(b *testing.B) {
	ws := b.TempDir()
	for i := range 2000 {
		dir := filepath.Join(ws, "d"+strconv.Itoa(i/100), "e"+strconv.Itoa(i%100))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(j)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, r := range []string{".", "d1", "d2/e3"} {
		for _, sub := range []string{".git/objects", ".git/refs", ".git/hooks"} {
			if err := os.MkdirAll(filepath.Join(ws, r, sub), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(ws, r, ".git", "config"), []byte("[core]\n\thooksPath = hooks\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := scanRepos(ws, nil, true)
		if err != nil || len(s.markers) != 3 {
			b.Fatalf("%v, %d markers", err, len(s.markers))
		}
	}
}
