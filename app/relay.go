package app

import (
	"context"

	"github.com/avaagent/ava/store/postgres"
)

// startRelay makes the hub serve every session live whichever process
// sharing the PostgreSQL database publishes to it (see postgres.Relay):
// started when the store is PostgreSQL and the instance is not
// ReadOnly, stopped by Close before the store closes. With the SQLite
// store it does nothing, and the hub has no relay.
func (in *Instance) startRelay(readOnly bool) {
	pg, ok := in.Store.(*postgres.Store)
	if !ok || readOnly {
		return
	}
	relay := postgres.NewRelay(pg, in.Hub, in.Log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	in.closers = append(in.closers, func() error {
		cancel()
		return <-done
	})
}
