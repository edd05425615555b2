package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
)

// TestOpenFailureReturnsErrorNotPanic is the regression test for Open
// panicking in a nil Instance's Close when a part failed to open (the
// named result was set to nil before the deferred Close ran). Each case
// must return an error naming the path and the cause, close what was
// opened (goleak in TestMain catches a store left open) and leave the
// files that were there untouched.
func TestOpenFailureReturnsErrorNotPanic(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, root string) (keep string)
		want  []string
	}{
		{
			name: "corrupt ava.db",
			setup: func(t *testing.T, root string) string {
				p := filepath.Join(root, "ava.db")
				write(t, p, bytes.Repeat([]byte("this is not an SQLite database\n"), 200))
				return p
			},
			want: []string{"ava.db", "not a valid SQLite database", "left as it is"},
		},
		{
			name: "logs is a file",
			setup: func(t *testing.T, root string) string {
				p := filepath.Join(root, "logs")
				write(t, p, []byte("my notes\n"))
				return p
			},
			want: []string{filepath.Join("logs", "ava"), "logs is a file, not a directory"},
		},
		{
			name: "data root is a file",
			setup: func(t *testing.T, root string) string {
				write(t, root, []byte("not a directory\n"))
				return root
			},
			want: []string{"create data root", "root is a file, not a directory"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			ws := t.TempDir()
			cfg, err := config.Load(func(k string) string {
				return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": ws, "AVA_CONFIRM": "never"}[k]
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "data root is a file" {
				if err := os.Remove(root); err != nil {
					t.Fatal(err)
				}
			}
			keep := c.setup(t, root)
			before := snapshot(t, keep)
			in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err == nil {
				in.Close()
				t.Fatal("Open succeeded")
			}
			if in != nil {
				t.Errorf("Open returned an Instance with its error: %+v", in)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range append(c.want, root) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if after := snapshot(t, keep); after != before {
				t.Errorf("%s changed:\nbefore %s\nafter  %s", keep, before, after)
			}
		})
	}
}

func TestCloseNilInstance(t *testing.T) {
	var in *app.Instance
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// snapshot is a file's bytes, mode and mtime as one comparable string.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().String() + " " + st.ModTime().String() + " " + string(data)
}
