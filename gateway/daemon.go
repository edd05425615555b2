package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/gateway/client"
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
	// Login, when set, is called after Ready with a one-time link that
	// logs a browser in to the web panel (not for a worker, which has no
	// panel).
	Login func(link string)
	// Timeouts bound slow and idle connections (zero fields:
	// DefaultTimeouts).
	Timeouts Timeouts
	// Draining, when set, is called when the shutdown starts, with how
	// many turns and subagents it waits for.
	Draining func(running int)
	// Channels, when set, builds the chat channels the daemon runs beside
	// the API (Telegram) over the opened instance.
	Channels func(in *app.Instance) ([]Channel, error)
}

// Channel is a chat channel the daemon runs beside the API: Run serves it
// until its context is done.
type Channel interface {
	Run(ctx context.Context) error
}

// WebhookChannel is a Channel that also takes updates over HTTP on the
// daemon's listener, at a pattern outside the API's token and Host rules
// (the channel authenticates its callers itself, e.g. Telegram's secret
// token header).
type WebhookChannel interface {
	Channel
	// Webhook returns the route pattern and handler, or ok false when the
	// channel does not take updates over HTTP.
	Webhook() (pattern string, h http.Handler, ok bool)
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
	cfg, err := withToken(cfg, log)
	if err != nil {
		return err
	}
	metrics := NewMetrics()
	in, err := app.Open(context.WithoutCancel(ctx), cfg, log, app.WithSink(metrics))
	if err != nil {
		return err
	}
	// Before any message: turns a killed process left open end now.
	if n, err := in.EndInterruptedTurns(ctx); err != nil {
		log.Error("end interrupted turns", "err", err)
	} else if n > 0 {
		log.Warn("turns left open by a process that stopped ended as interrupted", "count", n)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("listen on %s: %w", cfg.Addr, err), in.Close())
	}
	srv, err := New(Options{Instance: in, Addr: ln.Addr().String(), Token: cfg.Token, Heartbeat: opt.Heartbeat,
		Metrics: metrics, Logger: log, Timeouts: opt.Timeouts})
	if err != nil {
		return errors.Join(err, ln.Close(), in.Close())
	}
	chans, handler, err := channels(in, srv.Handler(), srv.opt.Timeouts.Body, opt)
	if err != nil {
		return errors.Join(err, ln.Close(), in.Close())
	}
	hs := srv.HTTPServer()
	hs.Handler = handler
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	stopChannels := runChannels(chans, log)
	if opt.Ready != nil {
		opt.Ready(ln.Addr().String())
	}
	if opt.Login != nil && cfg.Role != config.RoleWorker {
		link, err := srv.LoginLink()
		if err != nil {
			log.Warn("no login link for the web panel", "err", err)
		} else {
			opt.Login(link)
		}
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		stopChannels()
		return errors.Join(fmt.Errorf("serve: %w", err), in.Close())
	}
	stopChannels()
	return shutdown(srv, hs, in, served, opt, log)
}

// withToken returns cfg with the daemon's token: AVA_TOKEN when set,
// else the one kept in the data root, created at the first start.
func withToken(cfg config.Config, log *slog.Logger) (config.Config, error) {
	if cfg.Token != "" {
		return cfg, nil
	}
	if err := cfg.EnsureDataRoot(); err != nil {
		return cfg, err
	}
	tok, created, err := LoadOrCreateToken(cfg.DataRoot)
	if err != nil {
		return cfg, err
	}
	if created {
		log.Info("created the daemon's token", "path", client.TokenPath(cfg.DataRoot))
	}
	cfg.Token = tok
	return cfg, nil
}

// channels builds the chat channels and the handler that serves their
// webhooks beside the API, each with the API's body timeout.
func channels(in *app.Instance, api http.Handler, bodyTimeout time.Duration, opt DaemonOptions) ([]Channel, http.Handler, error) {
	if opt.Channels == nil {
		return nil, api, nil
	}
	chans, err := opt.Channels(in)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	for _, c := range chans {
		if wc, ok := c.(WebhookChannel); ok {
			if pattern, h, ok := wc.Webhook(); ok {
				mux.Handle(pattern, bodyDeadline(bodyTimeout, h))
			}
		}
	}
	return chans, mux, nil
}

// runChannels runs each channel until the returned stop is called; a
// channel's failure is logged and never stops the daemon or the others.
// stop cancels them and waits: a chat's unfinished update stays stored
// and is handled again at the next start.
func runChannels(chans []Channel, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range chans {
		wg.Go(func() {
			if err := c.Run(ctx); err != nil {
				log.Error("a chat channel stopped", "err", err)
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// shutdown stops accepting, drains within the grace period, closes the
// instance, and waits for the handlers.
func shutdown(srv *Server, hs *http.Server, in *app.Instance, served <-chan error, opt DaemonOptions, log *slog.Logger) error {
	grace := opt.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	in.StopTaking()
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
	// Cancel the turns first, so that the handlers waiting on them end;
	// close the instance (the store last of all) only once no handler
	// runs.
	sessErr := in.Sessions.Close()
	if err := <-stopped; err != nil {
		log.Warn("connections still open at shutdown", "err", err)
		_ = hs.Close()
	}
	<-served
	return errors.Join(sessErr, in.Close())
}
