package app

import (
	"context"
	"time"

	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/sqlite"
)

// startRelay makes the hub serve every session live whichever process
// sharing the PostgreSQL database publishes to it (see postgres.Relay),
// until Close, which stops it before the store closes. Only a cluster
// (openCluster) has one; with SQLite, startFileRelay does the same job.
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

// fileRelayEvery is how often the file relay looks for other processes'
// commits to a shared SQLite data root.
const fileRelayEvery = 200 * time.Millisecond

// startFileRelay makes the hub serve every session live whichever
// process sharing the SQLite data root stores to it: when another
// connection committed (sqlite.WatchCommits), the sessions whose
// journals are in memory are brought up to what the store holds
// (Hub.Stored reads only what a journal with live readers lacks). Kept
// events only: another process's streamed text (live-only) is not seen
// until its message is stored. Until Close, which stops it before the
// store closes.
func (in *Instance) startFileRelay(st *sqlite.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- st.WatchCommits(ctx, fileRelayEvery, func() {
			lasts, err := st.LastSeqs(ctx, in.Hub.Sessions())
			if err != nil {
				in.Log.Warn("file relay: read stored events", "err", err)
				return
			}
			for session, last := range lasts {
				if err := in.Hub.Stored(session, last); err != nil && ctx.Err() == nil {
					in.Log.Warn("file relay: catching up a session", "session", session, "err", err)
				}
			}
		})
	}()
	in.closers = append(in.closers, func() error {
		cancel()
		return <-done
	})
}
