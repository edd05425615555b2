package postgres_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
	"github.com/avaagent/ava/store/storetest"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(publisherEnv); url != "" {
		os.Exit(publishFromChild(url))
	}
	goleak.VerifyTestMain(pgtest.Main(m))
}

// openAt opens the store at url and closes it when t ends.
func openAt(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 8})
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
		return openAt(t, pgtest.URL(t))
	})
}

func TestDurable(t *testing.T) {
	var (
		mu   sync.Mutex
		urls = map[string]string{}
	)
	storetest.RunDurable(t, func(t *testing.T, dir string) store.Store {
		mu.Lock()
		url, ok := urls[dir]
		if !ok {
			url = pgtest.URL(t)
			urls[dir] = url
		}
		mu.Unlock()
		return openAt(t, url)
	})
}

func TestHookConformance(t *testing.T) {
	storetest.RunHooks(t, func(t *testing.T, o store.Outbox) store.Store {
		s, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{MaxConns: 8, Outbox: o})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
