package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Server is a PostgreSQL server of one test's own, which the test may
// restart or pause to inject an outage; the shared server of URL is
// never touched. It listens on a Unix socket in its own directory, which
// stays the same across restarts, so a URL stays valid.
type Server struct {
	t  testing.TB
	mu sync.Mutex // serialises Restart, Stop, Start, Pause and Resume
	s  *server
}

// Private starts a server for t alone, with a migrated database named
// ava, and stops it when t ends. It skips t when PostgreSQL is not
// available (fails it with AVA_REQUIRE_POSTGRES=1). Starting one costs
// an initdb, a second or two.
func Private(t testing.TB) *Server {
	t.Helper()
	s, err := initServer()
	if err == nil {
		if err = s.launch(); err != nil {
			_ = s.stop()
		}
	}
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("PostgreSQL is required (%s=1) but could not be started: %v", RequireEnv, err)
		}
		t.Skipf("SKIPPING: PostgreSQL could not be started: %v", err)
	}
	p := &Server{t: t, s: s}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := s.stop(); err != nil {
			t.Errorf("pgtest: stopping the private server: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE ava"); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := migrate(ctx, s.url("ava")); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return p
}

// URL is the connection URL of the server's migrated database.
func (p *Server) URL() string { return p.s.url("ava") }

// Log is what the server has logged so far, across its restarts.
func (p *Server) Log() string {
	b, _ := os.ReadFile(p.s.logPath())
	return string(b)
}

// Restart is pg_ctl restart -m fast: the server ends every session and
// stops, then starts again on the same socket and data directory. It
// returns once the server accepts connections again.
func (p *Server) Restart() {
	p.t.Helper()
	p.Stop()
	p.Start()
}

// Stop stops the server (fast shutdown); clients get connection errors
// until Start.
func (p *Server) Stop() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.s.halt(); err != nil {
		p.t.Fatalf("pgtest: stop: %v", err)
	}
}

// Start starts a stopped server again and waits until it accepts
// connections.
func (p *Server) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.s.launch(); err != nil {
		p.t.Fatalf("pgtest: start again: %v", err)
	}
}

// Pause stops the postmaster and every backend with SIGSTOP: open
// connections hang and new ones are not accepted, as on a host that
// froze, until Resume.
func (p *Server) Pause() {
	p.t.Helper()
	p.signalAll(syscall.SIGSTOP)
}

// Resume continues a paused server (SIGCONT).
func (p *Server) Resume() {
	p.t.Helper()
	p.signalAll(syscall.SIGCONT)
}

// signalAll sends sig to the postmaster and its children.
func (p *Server) signalAll(sig syscall.Signal) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.s.cmd == nil {
		p.t.Fatalf("pgtest: the server is not running")
	}
	pid := p.s.cmd.Process.Pid
	pids := append([]int{pid}, children(pid)...)
	for _, c := range pids {
		if err := syscall.Kill(c, sig); err != nil && err != syscall.ESRCH {
			p.t.Fatalf("pgtest: signal %d: %v", c, err)
		}
	}
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so cut at the last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// migrate opens a store on url, which migrates its database.
func migrate(ctx context.Context, url string) error {
	st, err := openStore(ctx, url)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", url, err)
	}
	return st.Close()
}
