package app

import (
	"context"
	"log/slog"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/store/postgres"
)

// LogReader returns a reader of the instance's audit log: with a store
// that holds every process's events (PostgreSQL, an audit.EventSource)
// the whole cluster's, read from the store; otherwise (SQLite) this data
// root's files.
func (in *Instance) LogReader(opts audit.ReaderOptions) *audit.Reader {
	if src, ok := in.Store.(audit.EventSource); ok {
		opts.Events = src
	}
	return audit.NewReader(in.Config.DataRoot, opts)
}

// OpenLogReader returns a reader of the audit log of cfg without opening
// an instance (ava logs, which needs no daemon), and a function releasing
// it. With AVA_DATABASE_URL it reads the cluster's events from
// PostgreSQL, opened read-only: never migrated (an older schema is an
// error) and in read-only transactions. Otherwise it reads the data
// root's files. It creates nothing.
func OpenLogReader(ctx context.Context, cfg config.Config, log *slog.Logger, opts audit.ReaderOptions) (*audit.Reader, func() error, error) {
	if !config.IsPostgresURL(cfg.DatabaseURL) {
		return audit.NewReader(cfg.DataRoot, opts), func() error { return nil }, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{Logger: log, ReadOnly: true, MaxConns: 2})
	if err != nil {
		return nil, nil, err
	}
	opts.Events = s
	return audit.NewReader(cfg.DataRoot, opts), s.Close, nil
}
