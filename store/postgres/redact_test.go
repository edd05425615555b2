package postgres_test

import (
	"context"
	"testing"

	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/storetest"
)

// TestWritesAreMasked writes a secret through every write method that
// takes free text and reads back the masked value (see storetest.Masked).
func TestWritesAreMasked(t *testing.T) {
	storetest.Masked(t, func(t *testing.T, r *redact.Redactor) store.Store {
		s, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{Redactor: r})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
