package sqlite

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/avaagent/ava/store"
)

// TestOpenCorruptStoreIsLeftAlone damages a real store in ways a crash,
// a bad copy or a disk fault can, and checks that Open refuses each with
// an error naming the file, and neither writes to it nor creates its
// -wal and -shm files.
func TestOpenCorruptStoreIsLeftAlone(t *testing.T) {
	good := filepath.Join(t.TempDir(), FileName)
	s, err := Open(t.Context(), good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(t.Context(), store.Message{SessionKey: "k", Role: store.RoleUser, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8192 {
		t.Fatalf("store is only %d bytes", len(data))
	}
	cases := map[string][]byte{
		"header only":       data[:100],
		"first page zeroed": append(append(append([]byte{}, data[:100]...), make([]byte, 4096-100)...), data[4096:]...),
		"text":              bytes.Repeat([]byte("not a database\n"), 500),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(t.Context(), path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open accepted a damaged store")
			}
			msg := err.Error()
			for _, want := range []string{path, "not a valid SQLite database", "left as it is"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, content) {
				t.Error("Open modified the file it refused")
			}
			for _, extra := range []string{path + "-wal", path + "-shm", path + "-journal"} {
				if _, err := os.Stat(extra); err == nil {
					t.Errorf("Open created %s", extra)
				}
			}
		})
	}
}

// TestOpenOnFullDisk opens a store whose file is /dev/full, where every
// write fails with ENOSPC as on a full disk: the error must name the file
// and say the disk is full.
func TestOpenOnFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system:", err)
	}
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a full disk")
	}
	for _, want := range []string{path, "the disk is full"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestWriteOnFullDisk fills the store up to a page limit (SQLite's
// SQLITE_FULL, the code a full disk gives) and checks a write's error
// names the file and says the disk is full.
func TestWriteOnFullDisk(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), FileName))
	var pages int
	if err := s.writer.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer.ExecContext(t.Context(), "PRAGMA max_page_count = "+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	var err error
	for range 100 {
		if _, err = s.AppendMessage(t.Context(), store.Message{SessionKey: "k", Role: store.RoleUser, Text: big}); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("no write failed past max_page_count")
	}
	for _, want := range []string{s.Path(), "the disk is full"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestOpenStoreCorruptInTheMiddle damages pages in the middle of a real
// store (64 KiB of random bytes, as a bad disk or a torn copy leaves
// them): Open refuses it with the README's message instead of migrating
// and writing to it, and the file's bytes are left as they were.
func TestOpenStoreCorruptInTheMiddle(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]store.Message, 2000)
	for i := range msgs {
		msgs[i] = store.Message{SessionKey: "k" + strconv.Itoa(i%50), Role: store.RoleUser, Text: strings.Repeat("words ", 200)}
	}
	if err := s.AppendMessages(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 1<<20 {
		t.Fatalf("store is only %d bytes", len(data))
	}
	mid := len(data) / 2
	noise := make([]byte, 64<<10)
	for i := range noise {
		noise[i] = byte(i*7919 + 13)
	}
	copy(data[mid:], noise)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(t.Context(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a store damaged in the middle")
	}
	for _, want := range []string{path, "damaged", "left as it is", "move it aside"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Error("Open modified the file it refused")
	}
}
