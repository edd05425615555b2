package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/sandbox"
)

// Grace periods of a process group's end.
const (
	// termGrace is how long a group has between SIGTERM and SIGKILL.
	termGrace = 300 * time.Millisecond
	// drainGrace is how long output is still read after the command has
	// ended, for a process outside its group that holds the pipe.
	drainGrace = 250 * time.Millisecond
)

// proc is one process to run.
type proc struct {
	argv    []string
	dir     string
	env     []string
	timeout time.Duration
	// box runs the process in the sandbox; nil runs it unconfined.
	box *sandbox.Spec
}

// outcome is how a process ended.
type outcome struct {
	output    string // combined stdout and stderr, capped
	exitCode  int    // -1 if killed by a signal
	signal    string // the signal that killed it, if one did
	timedOut  bool
	cancelled bool
	elapsed   time.Duration
	// repos is Ava's note on repositories the command left in the
	// workspace and Ava moved aside (sandbox.RepoNotice), or "".
	repos string
}

// run starts p in its own process group and waits for it, its timeout or
// ctx, whichever comes first. Whatever way it ends, the group is killed
// and run returns within about termGrace+drainGrace of that end. Only a
// failure to start is an error.
func run(ctx context.Context, p proc, maxOutput int) (outcome, error) {
	if ctx.Err() != nil {
		return outcome{cancelled: true}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return outcome{}, fmt.Errorf("output pipe: %w", err)
	}
	defer pr.Close()
	cmd, box, err := p.command()
	if err != nil {
		pw.Close()
		return outcome{}, err
	}
	cmd.Stdin = nil // /dev/null
	// An *os.File as stdout makes the child write to the pipe directly,
	// so cmd.Wait waits for the process only, never for the pipe.
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if box != nil {
		err = box.Start()
	} else {
		err = cmd.Start()
	}
	pw.Close()
	if err != nil {
		return outcome{}, fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	pgid := cmd.Process.Pid
	out := newCapBuffer(maxOutput)
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(out, pr) })
	exited := make(chan error, 1)
	wait := cmd.Wait
	if box != nil {
		wait = box.Wait // also removes the sandbox's cgroup
	}
	wg.Go(func() { exited <- wait() })

	var o outcome
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-timer.C:
		o.timedOut = true
		waitErr = terminate(pgid, exited)
	case <-ctx.Done():
		o.cancelled = true
		waitErr = terminate(pgid, exited)
	}
	o.elapsed = time.Since(start)
	// Background jobs the command left behind die with the call.
	killGroup(pgid, syscall.SIGKILL)
	_ = pr.SetReadDeadline(time.Now().Add(drainGrace))
	wg.Wait()
	o.output = out.String()
	if waitErr != nil && cmd.ProcessState == nil {
		return o, fmt.Errorf("wait for %s: %w", p.argv[0], waitErr)
	}
	o.exitCode, o.signal = exitStatus(cmd.ProcessState)
	if box == nil {
		return o, nil
	}
	o.repos = sandbox.RepoNotice(box.RepoChanges())
	ex, err := box.Exit()
	var setupErr *sandbox.SetupError
	switch {
	case err == nil:
		o.exitCode, o.signal = ex.Code, ex.Signal
	case errors.As(err, &setupErr):
		return o, err
	}
	// Otherwise the helper was killed before it could report (timeout,
	// cancel): its own end stands.
	return o, nil
}

// command builds the process: the sandbox's helper when p.box is set
// (returned too), else the command itself in its own process group.
func (p proc) command() (*exec.Cmd, *sandbox.Cmd, error) {
	if p.box == nil {
		cmd := exec.Command(p.argv[0], p.argv[1:]...)
		cmd.Dir = p.dir
		cmd.Env = p.env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd, nil, nil
	}
	spec := *p.box
	spec.Argv, spec.Env, spec.Dir = p.argv, p.env, p.dir
	box, err := sandbox.Command(spec)
	if err != nil {
		return nil, nil, err
	}
	return box.Cmd, box, nil
}

// terminate asks the group to stop, then kills it, and returns the
// leader's wait result.
func terminate(pgid int, exited <-chan error) error {
	killGroup(pgid, syscall.SIGTERM)
	select {
	case err := <-exited:
		return err
	case <-time.After(termGrace):
		killGroup(pgid, syscall.SIGKILL)
		return <-exited
	}
}

// killGroup signals every process in the group. Its error is ignored:
// ESRCH means the group is already empty, and nothing else can fail for a
// group we created.
func killGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// exitStatus reads the exit code and any killing signal.
func exitStatus(st *os.ProcessState) (int, string) {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return st.ExitCode(), ""
}

// capBuffer keeps the first and last bytes of a stream up to a total of
// max, and counts the rest.
type capBuffer struct {
	mu         sync.Mutex
	headMax    int
	tailMax    int
	head, tail []byte
	total      int64
}

func newCapBuffer(max int) *capBuffer {
	head := max / 2
	return &capBuffer{headMax: head, tailMax: max - head}
}

// Write implements io.Writer; it never fails.
func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headMax - len(b.head); room > 0 {
		take := min(room, len(p))
		b.head = append(b.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 {
		return n, nil
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.tailMax {
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailMax:]...)
	}
	return n, nil
}

// String returns what was kept, with a marker where bytes were cut, as
// valid UTF-8.
func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.tail
	if len(tail) > b.tailMax {
		tail = tail[len(tail)-b.tailMax:]
	}
	kept := int64(len(b.head) + len(tail))
	if kept == b.total {
		return strings.ToValidUTF8(string(b.head)+string(tail), "\uFFFD")
	}
	head := trimPartialRuneEnd(b.head)
	tail = trimPartialRuneStart(tail)
	shown := len(head) + len(tail)
	return strings.ToValidUTF8(fmt.Sprintf("%s\n[output truncated: showed %d of %d bytes; %d bytes cut from the middle]\n%s",
		head, shown, b.total, b.total-int64(shown), tail), "\uFFFD")
}

func trimPartialRuneEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

func trimPartialRuneStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
