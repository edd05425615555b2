package attach_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/attach"
)

// TestPutIsAllOrNothing: an upload with one bad file stores none of its
// files, and a good one is read back as stored; a temporary folder a
// crash left is removed by the next Store.
func TestPutIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, ".tmp-crashed", "A-000000000000"), 0o700))
	s, err := attach.New(dir, 100, 3)
	must(t, err)
	if _, err := os.Stat(filepath.Join(dir, ".tmp-crashed")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a crash's temporary folder stayed: %v", err)
	}
	_, err = s.Put([]attach.Upload{{Name: "a.txt", Body: strings.NewReader("fine")}, {Name: "b.bin", Body: strings.NewReader("\x00\x01")}})
	if !errors.Is(err, attach.ErrUnknownType) {
		t.Fatalf("a binary file: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused upload left %v", entries)
	}
	got, err := s.Put([]attach.Upload{{Name: `..\evil/"x".json`, Body: strings.NewReader(`{"a":1}`)}})
	must(t, err)
	a, body, err := s.Read(got[0].ID)
	must(t, err)
	if a.Name != "_x_.json" || a.Type != "application/json" || a.Kind != attach.Text || string(body) != `{"a":1}` {
		t.Fatalf("read back %+v %q", a, body)
	}
	for _, id := range []string{"../x", "A-zzzzzzzzzzzz", "A-000000000000"} {
		if _, err := s.Get(id); !errors.Is(err, attach.ErrNotFound) {
			t.Errorf("Get(%q): %v", id, err)
		}
	}
	for _, name := range []string{"", "..", "\x00\x01"} {
		if _, err := s.Put([]attach.Upload{{Name: name, Body: strings.NewReader("x")}}); !errors.Is(err, attach.ErrBadName) {
			t.Errorf("name %q: %v", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
