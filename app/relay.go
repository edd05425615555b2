package app

import (
	"context"

	"github.com/avaagent/ava/store/postgres"
)

// startRelay makes the hub serve every session live whichever process
// sharing the PostgreSQL database publishes to it (see postgres.Relay),
// until Close, which stops it before the store closes. Only a cluster
// (openCluster) has one: with SQLite the hub has no relay.
func (in *Instance) startRelay(pg *postgres.Store) {
	relay := postgres.NewRelay(pg, in.Hub, in.Log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	in.closers = append(in.closers, func() error {
		cancel()
		return <-done
	})
}
