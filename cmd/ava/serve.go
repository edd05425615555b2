package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/telegram"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/gateway"
	"github.com/avaagent/ava/gateway/client"
)

type serveOptions struct {
	addr      string
	role      string
	grace     time.Duration
	graceSet  bool
	heartbeat time.Duration
	// watch reloads the configuration when its files change.
	watch   bool
	offline bool
}

func newServeCmd(a *App) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:7777]",
		Short: "Run the daemon: web panel, HTTP API and live event streams",
		Long: `Run Ava as a daemon: the web panel (log a browser in with the one-time
link it prints, or ava panel prints), the HTTP API and Server-Sent Event
streams (see docs/api.md), which ava ps, status, stop and send talk to.

It binds 127.0.0.1:7777 unless --addr or AVA_ADDR says otherwise, and every
route but /healthz, /readyz and the panel's static files needs its token:
AVA_TOKEN when set, else the one it creates at its first start in the data
root (daemon.token, mode 0600), which ava ps, status, stop, send, spawn and
chat read. When its standard output is a terminal it prints a one-time link
that logs a browser in to the panel; else (under systemd, into a log) it
prints none, and ava panel prints one. On an address that is not loopback it refuses to
start without AVA_TOKEN.

SIGINT or SIGTERM stops it: it stops accepting, lets running turns and
subagents finish within the grace period (--grace, AVA_SHUTDOWN_GRACE), stops
and records as interrupted what still runs, flushes the logs and exits 0.`,
		Example: `  ava serve
  AVA_TOKEN=$(openssl rand -hex 16) ava serve --addr 0.0.0.0:7777`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(cmd); err != nil {
				return err
			}
			return serve(cmd, a, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "", "listen address (default $AVA_ADDR, else 127.0.0.1:7777)")
	f.StringVar(&o.role, "role", "", "with AVA_DATABASE_URL, what this process does in the cluster: gateway (chats, streams, the panel), worker (runs subagents; serves /healthz, /readyz and /metrics only) or all (default $AVA_ROLE, else all)")
	f.DurationVar(&o.grace, "grace", 0, "how long a shutdown lets running turns finish (default $AVA_SHUTDOWN_GRACE or config.yaml's shutdown_grace, else 30s)")
	f.DurationVar(&o.heartbeat, "heartbeat", gateway.DefaultHeartbeat, "interval of the streams' heartbeat comments")
	_ = f.MarkHidden("heartbeat")
	f.BoolVar(&o.watch, "watch", true, "reload config.yaml and the role files when they change (--watch=false: only on SIGHUP and ava reload)")
	addOfflineFlag(cmd, &o.offline)
	return cmd
}

// check checks the flags' durations; --grace, when given, overrides the
// configuration's shutdown_grace (serve applies it).
func (o *serveOptions) check(cmd *cobra.Command) error {
	o.graceSet = cmd.Flags().Changed("grace")
	if o.graceSet && o.grace <= 0 {
		return usageError(fmt.Errorf("--grace %s: want a positive duration", o.grace))
	}
	if o.heartbeat <= 0 {
		return usageError(fmt.Errorf("--heartbeat %s: want a positive duration", o.heartbeat))
	}
	return checkRoleFlag(o.role)
}

// checkRoleFlag refuses a --role that is none of the cluster roles, as a
// usage error naming the flag (not AVA_ROLE, which it overrides).
func checkRoleFlag(role string) error {
	switch role {
	case "", config.RoleAll, config.RoleGateway, config.RoleWorker:
		return nil
	}
	return usageError(fmt.Errorf("--role %q: use %s, %s or %s", role, config.RoleGateway, config.RoleWorker, config.RoleAll))
}

// override applies the flags to cfg.
func (o serveOptions) override(cfg config.Config) config.Config {
	if o.addr != "" {
		cfg.Addr = o.addr
	}
	if o.graceSet {
		cfg.ShutdownGrace = o.grace
	}
	if o.role != "" {
		cfg.Role = o.role
	}
	return cfg
}

func serve(cmd *cobra.Command, a *App, o serveOptions) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	cfg = o.override(cfg)
	if cfg.Role != "" && cfg.Role != config.RoleAll && !config.IsPostgresURL(cfg.DatabaseURL) {
		return usageError(fmt.Errorf("role %s needs a cluster: set AVA_DATABASE_URL=postgres://… (the embedded SQLite store runs everything in one process)", cfg.Role))
	}
	cfg, _ = a.chooseModel(cfg, o.offline, "")
	// The login link is a credential for 15 minutes: printed to a
	// person's terminal only, never into a log or the journal (stdout
	// under systemd), which says where to get one instead.
	terminal := IsTerminal(a.Stdout)
	opt := gateway.ServeOptions{Grace: cfg.ShutdownGrace, Heartbeat: o.heartbeat, Logger: a.Logger(),
		Ready: func(addr string) {
			if cfg.Role == config.RoleWorker {
				fmt.Fprintf(a.Stdout, "ava worker: listening on http://%s/ (/healthz, /readyz and /metrics); running subagents from the cluster's job queue\n", addr)
				return
			}
			fmt.Fprintf(a.Stdout, "ava serve: listening on http://%s/ (the web panel, and the API under /api)\n", addr)
			if !terminal {
				fmt.Fprintln(a.Stdout, "ava serve: to log a browser in to the web panel, run ava panel (with this daemon's AVA_ADDR and data root): it prints a one-time link")
			}
		},
		Draining: func(running int) {
			fmt.Fprintf(a.Stderr, "ava serve: shutting down; waiting up to %s for %d running turn(s) and subagent(s)\n", cfg.ShutdownGrace, running)
		}}
	if terminal {
		opt.Login = func(link string) {
			fmt.Fprintf(a.Stdout, "ava serve: to log a browser in to the web panel, open %s (it works once, within %s; ava panel prints a new one)\n",
				link, gateway.LoginCodeTTL)
		}
	}
	err = runDaemon(cmd.Context(), a, cfg, opt, o)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		return withHint(err, "see ava serve --help")
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Stderr, "ava serve: stopped")
	return nil
}

// runDaemon assembles the daemon where the process starts: the token, the
// runtime (with the daemon's metrics as a sink), the turns a killed
// process left open, the listener and the chat channels; then it serves
// until ctx is done and closes the runtime last.
func runDaemon(ctx context.Context, a *App, cfg config.Config, opt gateway.ServeOptions, o serveOptions) (err error) {
	log := opt.Logger
	if opt.Token, err = gateway.DaemonToken(cfg, log); err != nil {
		return err
	}
	cfg.Token = opt.Token
	opt.Metrics = gateway.NewMetrics()
	rt, err := ava.Open(context.WithoutCancel(ctx), ava.Options{Config: cfg, Logger: log, Sinks: []ava.Sink{opt.Metrics},
		Load: daemonLoader(a, o, opt.Token)})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rt.Close()) }()
	// Changed files and SIGHUP reload the configuration until the
	// daemon stops (before the runtime closes).
	defer watchDaemon(ctx, a, rt, o.watch)()
	rt.ReportSandbox()
	// Before any message: turns a killed process left open end now.
	if n, err := rt.EndInterruptedTurns(ctx); err != nil {
		log.Error("end interrupted turns", "err", err)
	} else if n > 0 {
		log.Warn("turns left open by a process that stopped ended as interrupted", "count", n)
	}
	ln, err := listen(ctx, cfg)
	if err != nil {
		return err
	}
	// Results a stopped process never reported are reported now.
	rt.SweepReports()
	if opt.Channels, err = chatChannels(a, cfg, rt); err != nil {
		return errors.Join(err, ln.Close())
	}
	return gateway.Serve(ctx, ln, rt, opt)
}

// listen listens on cfg.Addr. An address in use is said plainly, with
// what to do: when an Ava daemon answers there, that it already runs;
// else to stop what holds the port or choose another address.
func listen(ctx context.Context, cfg config.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err == nil {
		return ln, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	inUse := fmt.Errorf("address %s is already in use", cfg.Addr)
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if h, herr := client.New(cfg.Addr, "").Health(hctx); herr == nil {
		return nil, withHint(fmt.Errorf("%w: an Ava daemon (%s) already runs there", inUse, h.Version),
			"use it (ava ps, ava chat, ava panel talk to it), stop it, or start this one elsewhere with --addr HOST:PORT or AVA_ADDR")
	}
	return nil, withHint(inUse, "another program listens there: stop it, or start Ava elsewhere with --addr HOST:PORT or AVA_ADDR (and point ava ps, chat and panel at it with AVA_ADDR)")
}

// chatChannels builds the chat channels the configuration asks for: the
// Telegram channel when TELEGRAM_BOT_TOKEN is set.
func chatChannels(a *App, cfg config.Config, rt *ava.Runtime) ([]gateway.Channel, error) {
	if cfg.TelegramBotToken == "" {
		return nil, nil
	}
	allowed, err := telegram.ParseAllowed(cfg.TelegramAllowed)
	if err != nil {
		return nil, usageError(err)
	}
	ch, err := telegram.New(telegram.Config{Token: cfg.TelegramBotToken, APIURL: cfg.TelegramAPIURL, Allowed: allowed,
		WebhookSecret: cfg.TelegramWebhookSecret, Runtime: rt, Logger: a.Logger()})
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(a.Stderr, "ava serve: "+ch.Describe())
	rt.OnReload(func(cfg config.Config) (func(), error) {
		allowed, err := telegram.ParseAllowed(cfg.TelegramAllowed)
		if err != nil {
			return nil, err
		}
		return func() { ch.SetAllowed(allowed) }, nil
	})
	return []gateway.Channel{ch}, nil
}

func newWorkerCmd(a *App) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "worker [--addr 127.0.0.1:7778]",
		Short: "Run subagents from a cluster's job queue (ava serve --role worker)",
		Long: `Run a worker of an Ava cluster on PostgreSQL (AVA_DATABASE_URL): it takes
subagent runs from the shared job queue and runs them, as many at once as
AVA_MAX_CONCURRENT_SUBAGENTS allows in the whole cluster. Gateways (ava serve
--role gateway) accept the chats. It serves only /healthz, /readyz and
/metrics, on --addr (default 127.0.0.1:7778).

SIGINT or SIGTERM drains it: it stops taking jobs, checkpoints its resumable
runs and hands them over to the other workers, records the others as
interrupted, and exits 0. See docs/cluster.md.`,
		Example: `  AVA_DATABASE_URL=postgres://ava@db/ava ava worker`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(cmd); err != nil {
				return err
			}
			o.role = config.RoleWorker
			if o.addr == "" {
				o.addr = "127.0.0.1:7778"
			}
			return serve(cmd, a, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "", "listen address of the health endpoints (default 127.0.0.1:7778)")
	f.DurationVar(&o.grace, "grace", 0, "how long a shutdown lets running subagents finish (default $AVA_SHUTDOWN_GRACE or config.yaml's shutdown_grace, else 30s)")
	f.DurationVar(&o.heartbeat, "heartbeat", gateway.DefaultHeartbeat, "interval of the streams' heartbeat comments")
	_ = f.MarkHidden("heartbeat")
	f.BoolVar(&o.watch, "watch", true, "reload config.yaml and the role files when they change (--watch=false: only on SIGHUP)")
	return cmd
}
