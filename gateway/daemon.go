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

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/gateway/client"
)

// DefaultGrace is how long a shutdown waits for running turns.
const DefaultGrace = 30 * time.Second

// ServeOptions configure Serve.
type ServeOptions struct {
	// Token is the daemon's bearer token (DaemonToken); it must be set.
	Token string
	// Grace is how long a shutdown lets running turns and subagents
	// finish before they are stopped (default DefaultGrace).
	Grace time.Duration
	// Heartbeat is the streams' heartbeat (default DefaultHeartbeat).
	Heartbeat time.Duration
	Logger    *slog.Logger
	// Metrics are the daemon's metrics: pass the same value to
	// ava.Options.Sinks when opening the runtime, so that they count
	// its events (nil: new ones, not fed by events).
	Metrics *Metrics
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
	// Conns bound the connections (zero fields: their defaults, from
	// the process's descriptor limit).
	Conns ConnLimits
	// Draining, when set, is called when the shutdown starts, with how
	// many turns and subagents it waits for.
	Draining func(running int)
	// Channels are the chat channels the daemon runs beside the API
	// (Telegram), built over the same runtime.
	Channels []Channel
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

// Serve is the daemon over an opened runtime: it serves the API, the
// panel and the chat channels on ln until ctx is done, then shuts down:
// it stops accepting, lets running turns and subagents finish within the
// grace period, stops the sessions and waits for the handlers. The caller
// opened rt and closes it after Serve returns (which records what still
// runs as interrupted and flushes the logs); the daemon is assembled where
// the process starts (cmd/ava's serve).
func Serve(ctx context.Context, ln net.Listener, rt *ava.Runtime, opt ServeOptions) error {
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	srv, err := New(Options{Runtime: rt, Addr: ln.Addr().String(), Token: opt.Token, Heartbeat: opt.Heartbeat,
		Metrics: opt.Metrics, Logger: log, Timeouts: opt.Timeouts, Conns: opt.Conns})
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	hs := srv.HTTPServer()
	hs.Handler = channelHandler(opt.Channels, srv.Handler(), srv.opt.Timeouts.Body)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(srv.Listener(ln)) }()
	stopChannels := runChannels(opt.Channels, log)
	if opt.Ready != nil {
		opt.Ready(ln.Addr().String())
	}
	if opt.Login != nil && rt.Config().Role != config.RoleWorker {
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
		return errors.Join(fmt.Errorf("serve: %w", err), rt.CloseSessions())
	}
	stopChannels()
	return shutdown(srv, hs, rt, served, opt, log)
}

// DaemonToken returns the daemon's token: cfg.Token (AVA_TOKEN) when
// set, else the one kept in the data root, created at the first start.
// It refuses a non-loopback cfg.Addr without AVA_TOKEN.
func DaemonToken(cfg config.Config, log *slog.Logger) (string, error) {
	if _, err := newGuard(cfg.Addr, cfg.Token, nil); err != nil {
		return "", err
	}
	if cfg.Token != "" {
		return cfg.Token, nil
	}
	if err := cfg.EnsureDataRoot(); err != nil {
		return "", err
	}
	tok, created, err := LoadOrCreateToken(cfg.DataRoot)
	if err != nil {
		return "", err
	}
	if created && log != nil {
		log.Info("created the daemon's token", "path", client.TokenPath(cfg.DataRoot))
	}
	return tok, nil
}

// channelHandler serves the channels' webhooks beside the API, each
// with the API's body timeout.
func channelHandler(chans []Channel, api http.Handler, bodyTimeout time.Duration) http.Handler {
	if len(chans) == 0 {
		return api
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
	return mux
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

// shutdown stops accepting, drains within the grace period, stops the
// sessions, and waits for the handlers.
func shutdown(srv *Server, hs *http.Server, rt *ava.Runtime, served <-chan error, opt ServeOptions, log *slog.Logger) error {
	grace := opt.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	rt.StopTaking()
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
		log.Warn("grace period over: stopping what still runs (runs whose role resumes, and queued ones that never started, are left to the next process; the others are recorded as interrupted)", "running", left)
	}
	// Cancel the turns first, so that the handlers waiting on them end;
	// the caller closes the runtime (the store last of all) only once no
	// handler runs.
	sessErr := rt.CloseSessions()
	if err := <-stopped; err != nil {
		log.Warn("connections still open at shutdown", "err", err)
		_ = hs.Close()
	}
	<-served
	return sessErr
}
