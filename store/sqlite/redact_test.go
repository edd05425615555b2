package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/storetest"
)

// TestWritesAreMasked writes a secret through every write method that
// takes free text and reads back the masked value (see storetest.Masked).
func TestWritesAreMasked(t *testing.T) {
	storetest.Masked(t, func(t *testing.T, r *redact.Redactor) store.Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), FileName), Options{Redactor: r})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
