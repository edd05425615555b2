package sqlite

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/store"
)

// syncBuffer is a log destination safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// openLogged opens the store at path with a debug log it returns.
func openLogged(t *testing.T, path string) (*Store, *syncBuffer) {
	t.Helper()
	var buf syncBuffer
	s, err := Open(t.Context(), path, Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return s, &buf
}

// TestIntegrityCheckOnlyWhenTheFileMayHaveChanged: a store Ava closed
// cleanly is opened without reading every page again; the same file
// changed outside Ava (here only its times, as a copy or a restore
// would) is checked; and a store another Ava process is using is not.
func TestIntegrityCheckOnlyWhenTheFileMayHaveChanged(t *testing.T) {
	path := t.TempDir() + "/" + FileName
	s, log := openLogged(t, path)
	if strings.Contains(log.String(), "integrity check skipped") {
		t.Fatalf("a new store skipped its check:\n%s", log)
	}
	if err := s.AppendMessages(t.Context(), []store.Message{{SessionKey: "k", Role: store.RoleUser, Text: "hello"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, log = openLogged(t, path)
	if !strings.Contains(log.String(), "unchanged since Ava last closed") {
		t.Fatalf("a store closed cleanly was checked again:\n%s", log)
	}
	s.Close()

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	s, log = openLogged(t, path)
	if strings.Contains(log.String(), "integrity check skipped") {
		t.Fatalf("a file changed outside Ava was not checked:\n%s", log)
	}

	// While s runs (and heartbeats), another process opening the store
	// after a change it did not see skips the check.
	if err := s.RegisterInstance(t.Context(), store.Instance{ID: "i-live", Host: "h", PID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, later.Add(time.Hour), later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	other, log := openLogged(t, path)
	if !strings.Contains(log.String(), "in use by another Ava process") {
		t.Fatalf("a store in use was checked again:\n%s", log)
	}
	other.Close()
	s.Close()
}
