package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/avaagent/ava/store"
)

// dirState is a folder's listing and mtime and the hash of each file.
func dirState(t *testing.T, dir string) (names []string, sums map[string][32]byte, mtime time.Time) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sums = map[string][32]byte{}
	for _, e := range entries {
		names = append(names, e.Name())
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sums[e.Name()] = sha256.Sum256(data)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names, sums, st.ModTime()
}

// checkUnchanged fails t when dir is not as it was.
func checkUnchanged(t *testing.T, dir string, names []string, sums map[string][32]byte, mtime time.Time) {
	t.Helper()
	n2, s2, m2 := dirState(t, dir)
	if !slices.Equal(names, n2) || !m2.Equal(mtime) {
		t.Errorf("folder changed: %v (mtime %v) → %v (mtime %v)", names, mtime, n2, m2)
	}
	for n, sum := range sums {
		if s2[n] != sum {
			t.Errorf("%s changed", n)
		}
	}
}

// TestReadOnlyOpenWritesNothing opens an existing store, a missing one
// and one of an older schema read-only: each reads (the first its data,
// the others as empty), refuses writes, and leaves the folder exactly as
// it was (as root, whom no mode stops, this is the store's own doing).
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	rw, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.WriteMemory(ctx, store.Memory{Content: "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), FileName)
	makeOldSchema(t, old)
	cases := []struct {
		name, path string
		want       int
	}{
		{"current", path, 1},
		{"missing", filepath.Join(t.TempDir(), "none", FileName), 0},
		{"older schema", old, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := filepath.Dir(c.path)
			var names []string
			var sums map[string][32]byte
			var mtime time.Time
			if _, err := os.Stat(parent); err == nil {
				names, sums, mtime = dirState(t, parent)
			}
			s, err := Open(ctx, c.path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			mems, err := s.RecentMemory(ctx, 10)
			if err != nil || len(mems) != c.want {
				t.Errorf("RecentMemory: %v, %v; want %d", mems, err, c.want)
			}
			if err := s.MarkAnnounced(ctx, "S-000001"); err == nil {
				t.Error("a write to a read-only store succeeded")
			}
			if err := s.write(ctx, func(*sql.Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
				t.Errorf("write: %v, want ErrReadOnly", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if names == nil {
				if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was created: %v", parent, err)
				}
				return
			}
			checkUnchanged(t, parent, names, sums, mtime)
		})
	}
}

// makeOldSchema writes at path a database migrated only to its first
// version.
func makeOldSchema(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY, version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL, tstamp TIMESTAMP);
		INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, 1), (1, 1);`); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyOpenWhileInUse opens read-only a store another connection
// has open and writes: it shares the live database (mode=ro) and sees
// a commit made after it opened.
func TestReadOnlyOpenWhileInUse(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	rw, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := rw.WriteMemory(ctx, store.Memory{Content: "later"}); err != nil {
		t.Fatal(err)
	}
	if mems, err := ro.RecentMemory(ctx, 10); err != nil || len(mems) != 1 {
		t.Errorf("RecentMemory: %v, %v; want the later memory", mems, err)
	}
}
