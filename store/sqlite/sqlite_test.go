package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/storetest"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(publisherEnv); db != "" {
		os.Exit(publishFromChild(db))
	}
	if db := os.Getenv(holderEnv); db != "" {
		os.Exit(holdFromChild(db))
	}
	if db := os.Getenv(proberEnv); db != "" {
		fmt.Println(mayBeInUse(db))
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// openAt opens the store at path and closes it when t ends.
func openAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openAt(t, filepath.Join(t.TempDir(), FileName))
	})
}

func TestDurable(t *testing.T) {
	storetest.RunDurable(t, func(t *testing.T, dir string) store.Store {
		return openAt(t, filepath.Join(dir, FileName))
	})
}

func TestOpenGarbageFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	garbage := strings.Repeat("this is not an SQLite database, just text\n", 200)
	if err := os.WriteFile(path, []byte(garbage), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a text file as a database")
	}
	for _, want := range []string{path, "not a valid SQLite database"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	data, _ := os.ReadFile(path)
	if string(data) != garbage {
		t.Fatal("Open modified the file it refused")
	}
}

func TestOpenBadPaths(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(t.Context(), dir, Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open(directory) error = %v, want one naming %s", err, dir)
	}
	if _, err := Open(t.Context(), "", Options{}); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	under := filepath.Join(blocker, FileName)
	if _, err := Open(t.Context(), under, Options{}); err == nil || !strings.Contains(err.Error(), under) {
		t.Fatalf("Open under a file: error = %v, want one naming %s", err, under)
	}
}

func TestFileModeAndPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "root", FileName)
	s := openAt(t, path)
	if _, err := s.AppendMessage(t.Context(), store.Message{SessionKey: "k", Role: store.RoleUser, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Fatalf("%s has mode %o, want 600", filepath.Base(name), mode)
		}
	}
	checks := map[string]string{
		"journal_mode": "wal", "busy_timeout": "5000", "foreign_keys": "1", "synchronous": "1",
	}
	for pragma, want := range checks {
		for name, db := range map[string]*sql.DB{"writer": s.writer, "reader": s.reader} {
			if name == "reader" && pragma == "synchronous" {
				continue // a reader commits nothing (see dsn)
			}
			var got string
			if err := db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatalf("%s: PRAGMA %s: %v", name, pragma, err)
			}
			if got != want {
				t.Errorf("%s: PRAGMA %s = %s, want %s", name, pragma, got, want)
			}
		}
	}
	if _, err := s.reader.ExecContext(t.Context(), "DELETE FROM messages"); err == nil {
		t.Fatal("a reader connection could write")
	}
}

func TestHookConformance(t *testing.T) {
	storetest.RunHooks(t, func(t *testing.T, o store.Outbox) store.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), FileName), Options{Outbox: o})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
