// Package pgtest runs a throwaway PostgreSQL server for tests: one per
// test binary, started on first use in a temporary directory, listening
// only on a Unix socket there, and stopped when the tests end. Each test
// gets its own database, copied from a migrated template (CREATE DATABASE
// … TEMPLATE), so tests are isolated and may run in parallel.
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.URL(t) // a fresh, migrated database
//		…
//	}
//
// The server's binaries (initdb, postgres) are found in $AVA_POSTGRES_BIN,
// else on PATH or in /usr/lib/postgresql/<version>/bin, the highest
// version first. Without
// them URL skips the test with a loud message, unless
// AVA_REQUIRE_POSTGRES=1, which makes it fail (CI sets it).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/store/postgres"
)

// RequireEnv is the environment variable that, set to 1, makes a test
// fail instead of skipping when PostgreSQL cannot be started.
const RequireEnv = "AVA_REQUIRE_POSTGRES"

// superuser is the role initdb creates; connections are trusted.
const superuser = "ava"

// template is the migrated database each test's database is copied from.
const template = "ava_template"

// startTimeout bounds how long the server may take to accept connections.
const startTimeout = 60 * time.Second

var (
	startOnce sync.Once
	srv       *server
	startErr  error

	// createMu guards dbCount, which names each test's database.
	createMu sync.Mutex
	dbCount  int
)

// server is the running PostgreSQL.
type server struct {
	dir     string // removed at stop: data, socket, log
	socket  string
	bin     string              // directory of initdb and postgres
	cred    *syscall.Credential // who the server runs as; nil: as the test
	cmd     *exec.Cmd           // the running postmaster
	exited  chan struct{}       // closed when cmd has exited
	waitErr error
}

// testingM is what Main wraps: *testing.M.
type testingM interface{ Run() int }

type mainWrapper struct{ m testingM }

// Run runs the tests, then stops the server if one was started.
func (w mainWrapper) Run() int {
	code := w.m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping PostgreSQL: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Main wraps m so that running it stops the server after the tests:
// pass the result to goleak.VerifyTestMain, or call its Run and exit
// with its code.
func Main(m testingM) interface{ Run() int } { return mainWrapper{m} }

// URL returns the URL of a new database for t, migrated to the current
// schema, dropped when t ends. It starts the server on first use; when
// PostgreSQL is not available it skips t (fails it with
// AVA_REQUIRE_POSTGRES=1).
func URL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, template)
}

// EmptyURL is URL without the schema: a new, empty database (for tests
// of migrating).
func EmptyURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "template0")
}

// newDatabase creates a database for t copied from from.
func newDatabase(t testing.TB, from string) string {
	t.Helper()
	startOnce.Do(func() {
		srv, startErr = start()
		if startErr != nil && os.Getenv(RequireEnv) != "1" {
			// Shown without -v too: skipped tests are easy to miss.
			fmt.Fprintf(os.Stderr, "pgtest: WARNING: PostgreSQL tests are SKIPPED: %v\n", startErr)
		}
	})
	if startErr != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("PostgreSQL is required (%s=1) but could not be started: %v", RequireEnv, startErr)
		}
		t.Skipf("SKIPPING: PostgreSQL could not be started, so the PostgreSQL store is NOT tested: %v "+
			"(install postgresql, or set %s=1 to make this a failure)", startErr, RequireEnv)
	}
	createMu.Lock()
	dbCount++
	name := fmt.Sprintf("test_%d", dbCount)
	createMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := srv.exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+from); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := srv.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return srv.url(name)
}

// url is the connection URL of database name.
func (s *server) url(name string) string {
	q := url.Values{"host": {s.socket}, "user": {superuser}}
	return (&url.URL{Scheme: "postgres", Path: "/" + name, RawQuery: q.Encode()}).String()
}

// exec runs one statement on the postgres database.
func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.url("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// BinEnv is the environment variable that names the directory of initdb
// and postgres, instead of looking for them.
const BinEnv = "AVA_POSTGRES_BIN"

// binDir finds the directory of initdb and postgres.
func binDir() (string, error) {
	if d := os.Getenv(BinEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinEnv, d, err)
		}
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("initdb is neither on PATH nor in /usr/lib/postgresql/*/bin")
}

// credential is who the server runs as: PostgreSQL refuses to run as
// root, so a root test process runs it as the postgres user (or nobody).
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run PostgreSQL as")
}

// command builds a command run as cred; the server dies with the test
// process even if that is killed (Pdeathsig).
func command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// start initialises a cluster in a new temporary directory, starts the
// server on a Unix socket there and creates the migrated template.
func start() (_ *server, err error) {
	s, err := initServer()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	if err := s.launch(); err != nil {
		return nil, err
	}
	if err := s.makeTemplate(); err != nil {
		return nil, err
	}
	return s, nil
}

// initServer initialises a cluster in a new temporary directory, without
// starting it.
func initServer() (_ *server, err error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	// Short: a Unix socket path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	s := &server{dir: dir, socket: dir, bin: bin, cred: cred}
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("hand %s to the server's user: %w", dir, err)
		}
	}
	out, err := command(cred, filepath.Join(bin, "initdb"), "-D", s.data(), "-U", superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return s, nil
}

// data is the server's data directory.
func (s *server) data() string { return filepath.Join(s.dir, "data") }

// logPath is the server's log file, appended to at each start.
func (s *server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

// launch starts the postmaster on the initialised data directory and
// waits until it accepts connections.
func (s *server) launch() error {
	logFile, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	defer logFile.Close()
	cmd := command(s.cred, filepath.Join(s.bin, "postgres"), "-D", s.data(), "-k", s.dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	go func() {
		s.waitErr = cmd.Wait()
		close(exited)
	}()
	return s.waitReady(s.logPath())
}

// waitReady waits until the server accepts connections.
func (s *server) waitReady(logPath string) error {
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.url("postgres"))
		cancel()
		if err == nil {
			return conn.Close(context.Background())
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited (%v): %s", s.waitErr, strings.TrimSpace(string(log)))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres did not accept connections within %s: %v: %s", startTimeout, err, strings.TrimSpace(string(log)))
		}
	}
}

// makeTemplate creates the template database and migrates it by opening
// a store on it.
func (s *server) makeTemplate() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+template); err != nil {
		return err
	}
	return migrate(ctx, s.url(template))
}

// openStore opens (and so migrates) a store on url.
func openStore(ctx context.Context, url string) (*postgres.Store, error) {
	return postgres.Open(ctx, url, postgres.Options{})
}

// stop stops the server started by URL, if any.
func stop() error {
	if srv == nil {
		return nil
	}
	return srv.stop()
}

// stop shuts the server down (fast shutdown, then a kill) and removes its
// directory.
func (s *server) stop() error {
	errs := []error{s.halt()}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", s.dir, err))
	}
	return errors.Join(errs...)
}

// halt stops the postmaster if it runs: a fast shutdown (SIGINT: open
// sessions are ended, pg_ctl stop -m fast), then a kill after 15 s.
func (s *server) halt() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot stop
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
		return nil
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("postgres did not stop within 15s and was killed")
	}
}
