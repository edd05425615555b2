package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/internal/wait"
)

// WatchCommits calls changed each time a commit by another connection to
// the database is seen: another process sharing the data root, or this
// process's own writer. It polls SQLite's data_version every `every` on a
// connection of its own (the value is per connection), and returns when
// ctx ends. It is how several processes on one data root see each
// other's events (see app's file relay); PostgreSQL notifies instead.
//
// The connection is outside the reader pool: it would hold one of the
// pool's connections for good, likely the one warmReader readied, and it
// never reads a table, so it never parses the schema.
func (s *Store) WatchCommits(ctx context.Context, every time.Duration, changed func()) error {
	unhold, err := holdHere(s.path) // its connection maps the -shm file
	if err != nil {
		return fmt.Errorf("watch commits: %w", err)
	}
	defer unhold()
	db := sql.OpenDB(newConnector(dsn(s.path, true)))
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("watch commits: %w", err)
	}
	defer conn.Close()
	var last int64
	for first := true; ; first = false {
		var v int64
		if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("watch commits: read data_version", "err", err)
		} else if !first && v != last {
			changed()
		}
		last = v
		if !wait.Sleep(ctx, every) {
			return nil
		}
	}
}

// lastSeqsChunk bounds the sessions one LastSeqs query names.
const lastSeqsChunk = 400

// LastSeqs returns the highest stored event number of each of sessions
// that has events, in as few queries as the list allows.
func (s *Store) LastSeqs(ctx context.Context, sessions []string) (map[string]uint64, error) {
	out := make(map[string]uint64, len(sessions))
	for len(sessions) > 0 {
		n := min(len(sessions), lastSeqsChunk)
		chunk := sessions[:n]
		sessions = sessions[n:]
		args := make([]any, len(chunk))
		for i, k := range chunk {
			args[i] = k
		}
		rows, err := s.reader.QueryContext(ctx, `SELECT session_key, max(seq) FROM events
			WHERE session_key IN (`+strings.TrimSuffix(strings.Repeat("?,", n), ",")+`) GROUP BY session_key`, args...)
		if err != nil {
			return nil, fmt.Errorf("last event numbers: %w", err)
		}
		for rows.Next() {
			var k string
			var seq int64
			if err := rows.Scan(&k, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("last event numbers: %w", err)
			}
			out[k] = uint64(seq)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("last event numbers: %w", err)
		}
	}
	return out, nil
}
