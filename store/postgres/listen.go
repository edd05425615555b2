package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notification channels the store and the cluster use (PostgreSQL
// LISTEN/NOTIFY). Payloads are small text; a notification is sent in the
// transaction that made the change, so it is delivered only if, and once,
// the change is committed.
const (
	// ChannelEvents carries "<last seq> <session>" after events are
	// stored (AppendEvents): the number first, so the session key may
	// hold anything.
	ChannelEvents = "ava_events"
	// ChannelLive carries live-only events (streamed text) as JSON: a
	// Relay's batch (see Relay).
	ChannelLive = "ava_live"
	// ChannelRuns carries a run's ID when it reaches a final status
	// (TransitionRun, InterruptOwner, RecoverOwner).
	ChannelRuns = "ava_runs"
	// ChannelControl carries requests to the process running a subagent
	// (cancel, steer) as JSON.
	ChannelControl = "ava_control"
	// ChannelInstances carries an instance's ID when it is removed (a
	// drained worker), so that others take its runs over at once.
	ChannelInstances = "ava_instances"
)

// MaxPayload is the largest notification payload PostgreSQL accepts
// (8000 bytes), less a margin.
const MaxPayload = 7900

// Notify sends payload on channel now (outside any transaction).
func (s *Store) Notify(ctx context.Context, channel, payload string) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("notify %s: payload of %d bytes is over %d", channel, len(payload), MaxPayload)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}

// notifyTx queues a notification in tx: sent when tx commits.
func notifyTx(ctx context.Context, tx pgx.Tx, channel, payload string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}

// Listen receives the notifications of channels on a connection of its
// own and calls fn with each, in the order they were committed, until
// ctx is done (it then returns nil). ready, if not nil, is called each
// time the connection is listening (first and after each reconnect): a
// notification sent while it was down is lost, so a caller catches up
// from the store there. A lost connection is opened again with backoff;
// fn must not block for long.
func (s *Store) Listen(ctx context.Context, channels []string, ready func(), fn func(channel, payload string)) error {
	const firstBackoff = 50 * time.Millisecond
	backoff := firstBackoff
	for {
		listening := false
		err := s.listenOnce(ctx, channels, func() {
			listening = true
			if ready != nil {
				ready()
			}
		}, fn)
		if ctx.Err() != nil {
			return nil
		}
		if listening {
			backoff = firstBackoff // it worked until now: reconnect soon
		}
		s.log.Warn("store notifications: connection lost; reconnecting", "store", s.where, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listenOnce listens on one connection until it fails or ctx is done.
func (s *Store) listenOnce(ctx context.Context, channels []string, ready func(), fn func(channel, payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("listen %s: %w", ch, err)
		}
	}
	if ready != nil {
		ready()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return ctx.Err()
			}
			return err
		}
		fn(n.Channel, n.Payload)
	}
}
