package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// daemonScript: BLOCKTASK subagents block until stopped, SLOW turns take
// a moment, everything else answers at once.
const daemonScript = `conversations:
  - match: "BLOCKTASK"
    turns:
      - text: "never"
        delay: 1h
  - match: "SLOW"
    turns:
      - text: "slow done"
        delay: 500ms
  - match: "specialized .* subagent"
    turns:
      - text: "subagent answer"
      - text: "follow-up answer"
  - turns:
      - text: "hello back"
      - text: "second answer"
`

// daemon is an ava serve process.
type daemon struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer // read while the daemon writes to it
	done   chan struct{}
	c      *client.Client
	env    []string
	// token is the daemon's token (AVA_TOKEN or its data root's).
	token string
	// stdout is what it printed after its first line.
	stdout *lockedBuffer
}

// lockedBuffer is a buffer written by one goroutine and read by others.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// daemonEnv is a data root and a model shared by the daemons of a test.
func daemonEnv(t *testing.T) (env []string, model string) {
	t.Helper()
	root := t.TempDir()
	script := filepath.Join(root, "script.yaml")
	if err := os.WriteFile(script, []byte(daemonScript), 0o600); err != nil {
		t.Fatal(err)
	}
	model = "scripted/" + script
	operatorSubagentScript(t, filepath.Join(root, "data"), script)
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + filepath.Join(root, "data"),
		"AVA_WORKSPACE=" + root, "AVA_MODEL=" + model, "AVA_CONFIRM=never"}, model
}

// startDaemon starts ava serve on a free loopback port and waits until
// it listens.
func startDaemon(t *testing.T, env []string, args ...string) *daemon {
	t.Helper()
	return startDaemonCmd(t, env, exec.Command(avaBin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...))
}

// startDaemonCmd starts cmd, an ava serve (or a wrapper that runs one),
// with env, and waits until it listens.
func startDaemonCmd(t *testing.T, env []string, cmd *exec.Cmd) *daemon {
	t.Helper()
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{}), env: env}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("daemon did not start: %v\n%s", err, d.stderr)
	}
	d.stdout = &lockedBuffer{}
	go func() { io.Copy(d.stdout, rd); cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-d.done
	})
	_, rest, ok := strings.Cut(strings.TrimSpace(line), "http://")
	if !ok {
		t.Fatalf("no address in %q", line)
	}
	d.addr = strings.Fields(rest)[0]
	d.token = daemonToken(t, env)
	d.c = client.New(d.addr, d.token)
	return d
}

// daemonToken is the token of a daemon started with env: its AVA_TOKEN,
// else the one it keeps in its data root, as the command line reads it.
func daemonToken(t *testing.T, env []string) string {
	t.Helper()
	var tok, root string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AVA_TOKEN="); ok {
			tok = v
		}
		if v, ok := strings.CutPrefix(kv, "AVA_DATA_ROOT="); ok {
			root = v
		}
	}
	if tok != "" || root == "" {
		return tok
	}
	tok, err := client.ReadToken(root)
	if err != nil {
		t.Fatalf("the daemon's token: %v", err)
	}
	return tok
}

// exitCode waits for the process and returns its exit code.
func (d *daemon) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("daemon did not exit\n%s", d.stderr)
	}
	return d.cmd.ProcessState.ExitCode()
}

func bg(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// recorded waits until the daemon reports the subagent's stored record
// (its start is recorded beside its first model call).
func recorded(t *testing.T, c *client.Client, id string) {
	t.Helper()
	for ctx := bg(t); ctx.Err() == nil; {
		sa, err := c.Subagent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !sa.CreatedAt.IsZero() && sa.Status == "running" {
			return
		}
	}
	t.Fatalf("%s never recorded as running", id)
}

func chatText(t *testing.T, c *client.Client, req client.ChatRequest) client.TurnResult {
	t.Helper()
	st, err := c.Chat(bg(t), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == client.EventDone {
			var r client.TurnResult
			if err := json.Unmarshal(ev.Data, &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
}

func TestDaemonRestartAfterSIGKILLKeepsSessionsAndInterruptsRuns(t *testing.T) {
	env, _ := daemonEnv(t)
	env = append(env, "AVA_RESUME_ATTEMPTS=0") // resuming: resume_e2e_test.go
	d := startDaemon(t, env)
	first := chatText(t, d.c, client.ChatRequest{Message: "hello"})
	if first.Text != "hello back" {
		t.Fatalf("first turn %+v", first)
	}
	sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "BLOCKTASK", Model: spawnModel, Parent: first.Session})
	if err != nil {
		t.Fatal(err)
	}
	recorded(t, d.c, sa.ID)
	last, err := d.c.Stream(bg(t), first.Session, 0)
	if err != nil {
		t.Fatal(err)
	}
	var before []client.Event
	for len(before) == 0 || before[len(before)-1].Type != "SessionState" {
		ev, err := last.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.ID > 0 {
			before = append(before, ev)
		}
	}
	last.Close()
	d.cmd.Process.Signal(syscall.SIGKILL)
	if code := d.exitCode(t); code != -1 {
		t.Fatalf("SIGKILL exit %d", code)
	}

	d2 := startDaemon(t, env)
	got, err := d2.c.Subagent(bg(t), sa.ID)
	if err != nil || got.Status != "interrupted" {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	sessions, err := d2.c.Sessions(bg(t))
	if err != nil || len(sessions) != 1 || sessions[0].Key != first.Session || sessions[0].State != "idle" {
		t.Fatalf("sessions after restart %+v %v", sessions, err)
	}
	// Its history is kept: the replay holds what was streamed before,
	// then what the recovery added, numbered on with no hole.
	st, err := d2.c.Stream(bg(t), first.Session, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var replay []client.Event
	for len(replay) < len(before)+1 {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.ID > 0 {
			replay = append(replay, ev)
		}
	}
	for i, ev := range replay {
		if ev.ID != uint64(i+1) || (i < len(before) && string(ev.Data) != string(before[i].Data)) {
			t.Fatalf("replay event %d: %d %s, before %v", i, ev.ID, ev.Data, before)
		}
	}
	// The conversation goes on from its stored history.
	next := chatText(t, d2.c, client.ChatRequest{SessionKey: first.Session, Message: "still there?"})
	if next.Text != "second answer" {
		t.Fatalf("after restart %+v", next)
	}
}

func TestDaemonSIGTERMFinishesTurnsInterruptsTheRestAndExits0(t *testing.T) {
	env, _ := daemonEnv(t)
	env = append(env, "AVA_RESUME_ATTEMPTS=0") // resuming: resume_e2e_test.go
	d := startDaemon(t, env, "--grace", "2s")
	sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "BLOCKTASK", Model: spawnModel})
	if err != nil {
		t.Fatal(err)
	}
	recorded(t, d.c, sa.ID)
	turn, err := d.c.Chat(bg(t), client.ChatRequest{Message: "SLOW one"})
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Close()
	if ev, err := turn.Next(); err != nil || ev.Type != client.EventSession {
		t.Fatalf("first event %+v %v", ev, err)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	var res client.TurnResult
	for {
		ev, err := turn.Next()
		if err != nil {
			t.Fatalf("turn stream: %v\n%s", err, d.stderr)
		}
		if ev.Type == client.EventDone {
			json.Unmarshal(ev.Data, &res)
			break
		}
	}
	if res.Status != "success" || res.Text != "slow done" {
		t.Fatalf("the running turn did not finish: %+v", res)
	}
	if code := d.exitCode(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.stderr)
	}
	if !strings.Contains(d.stderr.String(), "shutting down") || !strings.Contains(d.stderr.String(), "stopped") {
		t.Fatalf("stderr %s", d.stderr)
	}
	d2 := startDaemon(t, env)
	got, err := d2.c.Subagent(bg(t), sa.ID)
	if err != nil || got.Status != "interrupted" {
		t.Fatalf("subagent still running at the end of the grace period: %+v %v", got, err)
	}
}

func TestDaemonClients(t *testing.T) {
	env, _ := daemonEnv(t)
	cli := func(addr string, args ...string) (string, string, int) {
		cmd := exec.Command(avaBin, args...)
		cmd.Env = append(env, "AVA_ADDR="+addr)
		return runCmd(t, cmd)
	}
	_, errOut, code := cli("127.0.0.1:1", "ps")
	if code != 1 || !strings.Contains(errOut, "no Ava daemon is running at http://127.0.0.1:1") || !strings.Contains(errOut, "ava serve") {
		t.Fatalf("ps with no daemon: exit %d\n%s", code, errOut)
	}
	d := startDaemon(t, env)
	// A background ava spawn hands the subagent to the daemon.
	out, errOut, code := cli(d.addr, "spawn", "--role", "researcher", "--model", spawnModel, "BLOCKTASK")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "S-") || !strings.Contains(errOut, "ava status "+id) {
		t.Fatalf("background spawn: exit %d\n%s\n%s", code, out, errOut)
	}
	sa := client.Subagent{ID: id}
	recorded(t, d.c, sa.ID)
	out, errOut, code = cli(d.addr, "ps")
	if code != 0 || !strings.Contains(out, sa.ID) || !strings.Contains(out, "researcher") || !strings.Contains(out, "running") {
		t.Fatalf("ps: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = cli(d.addr, "status", sa.ID)
	if code != 0 || !strings.Contains(out, "BLOCKTASK") || !strings.Contains(out, "running") {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	_, errOut, code = cli(d.addr, "send", sa.ID, "more")
	if code != 1 || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "--queue") {
		t.Fatalf("send to a running subagent: exit %d\n%s", code, errOut)
	}
	out, _, code = cli(d.addr, "stop", sa.ID)
	if code != 0 || !strings.Contains(out, "stopped ava:subagent:"+sa.ID) {
		t.Fatalf("stop: exit %d\n%s", code, out)
	}
	out, _, code = cli(d.addr, "ps", "--all", "--json")
	var list []client.Subagent
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Status != "cancelled" {
		t.Fatalf("ps --all --json: exit %d\n%s", code, out)
	}
	quick, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "quick", Model: spawnModel})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cli(d.addr, "send", "--queue", quick.ID, "and", "then?")
	if code != 0 || !strings.Contains(out, "follow-up answer") {
		t.Fatalf("send --queue: exit %d\n%s\n%s", code, out, errOut)
	}
	// A finished run's trace file does not stay open in the daemon.
	if path, open := openTrace(t, d.cmd.Process.Pid, quick.ID); open {
		t.Fatalf("%s still open after its run ended", path)
	}
	_, errOut, code = cli(d.addr, "status", "S-ffffff")
	if code != 2 || !strings.Contains(errOut, "404") {
		t.Fatalf("status of an unknown subagent: exit %d\n%s", code, errOut)
	}
}

// openTrace reports whether the process still has the subagent's trace
// file open a few audit sync intervals after its run ended.
func openTrace(t *testing.T, pid int, id string) (string, bool) {
	t.Helper()
	name := id + ".jsonl"
	deadline := time.Now().Add(5 * time.Second)
	for {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		open := ""
		for _, fd := range fds {
			if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); strings.HasSuffix(target, name) {
				open = target
			}
		}
		if open == "" || time.Now().After(deadline) {
			return open, open != ""
		}
		time.Sleep(50 * time.Millisecond)
	}
}
