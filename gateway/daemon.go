package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
)

// DefaultGrace is how long a shutdown waits for running turns.
const DefaultGrace = 30 * time.Second

// OfflineModel is the orchestrator's model when no provider is
// configured.
const OfflineModel = "scripted/demo"

// DaemonOptions configure Run.
type DaemonOptions struct {
	// Config is the validated configuration; Addr and Token are the
	// daemon's address and bearer token.
	Config config.Config
	// Grace is how long a shutdown lets running turns and subagents
	// finish before they are stopped (default DefaultGrace).
	Grace time.Duration
	// Heartbeat is the streams' heartbeat (default DefaultHeartbeat).
	Heartbeat time.Duration
	Logger    *slog.Logger
	// Ready, when set, is called with the bound address once the daemon
	// accepts connections.
	Ready func(addr string)
	// Draining, when set, is called when the shutdown starts, with how
	// many turns and subagents it waits for.
	Draining func(running int)
}

// Offline returns cfg set to answer with the offline scripted model when
// no provider is configured and no model is named, and whether it did.
func Offline(cfg config.Config) (config.Config, bool) {
	if app.HasRealProviderConfig(cfg) || cfg.Model != "" {
		return cfg, false
	}
	cfg.Model = OfflineModel
	return cfg, true
}

// Run is the daemon: it opens an instance, serves the API until ctx is
// done, then shuts down: it stops accepting, lets running turns and
// subagents finish within the grace period, closes the instance (which
// records what still runs as interrupted and flushes the logs) and
// returns nil.
func Run(ctx context.Context, opt DaemonOptions) error {
	cfg, log := opt.Config, opt.Logger
	if log == nil {
		log = slog.Default()
	}
	if _, err := newGuard(cfg.Addr, cfg.Token, nil); err != nil {
		return err
	}
	metrics := NewMetrics()
	in, err := app.Open(context.WithoutCancel(ctx), cfg, log, app.WithSink(metrics))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("listen on %s: %w", cfg.Addr, err), in.Close())
	}
	srv, err := New(Options{Instance: in, Addr: ln.Addr().String(), Token: cfg.Token, Heartbeat: opt.Heartbeat,
		Metrics: metrics, Logger: log})
	if err != nil {
		return errors.Join(err, ln.Close(), in.Close())
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if opt.Ready != nil {
		opt.Ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return errors.Join(fmt.Errorf("serve: %w", err), in.Close())
	}
	return shutdown(srv, hs, in, served, opt, log)
}

// shutdown stops accepting, drains within the grace period, closes the
// instance, and waits for the handlers.
func shutdown(srv *Server, hs *http.Server, in *app.Instance, served <-chan error, opt DaemonOptions, log *slog.Logger) error {
	grace := opt.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	running := srv.countRunning()
	log.Info("shutting down", "running", running, "grace", grace)
	if opt.Draining != nil {
		opt.Draining(running)
	}
	stopped := make(chan error, 1)
	sctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
	defer cancel()
	go func() { stopped <- hs.Shutdown(sctx) }()
	gctx, gcancel := context.WithTimeout(context.Background(), grace)
	left := srv.Drain(gctx)
	gcancel()
	if left > 0 {
		log.Warn("grace period over: stopping what still runs (recorded as interrupted)", "running", left)
	}
	closeErr := in.Close()
	if err := <-stopped; err != nil {
		log.Warn("connections still open at shutdown", "err", err)
		_ = hs.Close()
	}
	<-served
	return closeErr
}
