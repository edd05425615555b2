package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// SaveUpdates stores the updates not stored before, in one transaction,
// and returns the ones that were new.
func (s *Store) SaveUpdates(ctx context.Context, channel string, ups []store.ChannelUpdate) ([]store.ChannelUpdate, error) {
	if err := record.CheckKey("channel", channel); err != nil {
		return nil, fmt.Errorf("save updates: %w", err)
	}
	var fresh []store.ChannelUpdate
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		fresh = fresh[:0]
		now := record.ToNS(s.now())
		for _, u := range ups {
			tag, err := tx.Exec(ctx, `INSERT INTO channel_updates (channel, update_id, chat_id, payload, received_at)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, channel, u.ID, u.ChatID, string(u.Payload), now)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				fresh = append(fresh, u)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("save %s updates: %w", channel, err)
	}
	return fresh, nil
}

// PendingUpdates returns the stored updates not yet handled, in order.
func (s *Store) PendingUpdates(ctx context.Context, channel string) ([]store.ChannelUpdate, error) {
	rows, err := s.pool.Query(ctx, `SELECT update_id, chat_id, payload FROM channel_updates
		WHERE channel = $1 AND NOT done ORDER BY update_id`, channel)
	if err != nil {
		return nil, fmt.Errorf("pending %s updates: %w", channel, err)
	}
	defer rows.Close()
	var out []store.ChannelUpdate
	for rows.Next() {
		var (
			u       store.ChannelUpdate
			payload string
		)
		if err := rows.Scan(&u.ID, &u.ChatID, &payload); err != nil {
			return nil, fmt.Errorf("pending %s updates: %w", channel, err)
		}
		u.Payload = []byte(payload)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending %s updates: %w", channel, err)
	}
	return out, nil
}

// UpdateHandled marks an update handled.
func (s *Store) UpdateHandled(ctx context.Context, channel string, id int64) error {
	tag, err := s.pool.Exec(ctx, `UPDATE channel_updates SET done = TRUE WHERE channel = $1 AND update_id = $2`, channel, id)
	if err != nil {
		return fmt.Errorf("mark %s update handled: %w", channel, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("mark %s update handled: update %d: %w", channel, id, store.ErrNotFound)
	}
	return nil
}

// NextUpdate is one past the highest update ID stored, 0 if none.
func (s *Store) NextUpdate(ctx context.Context, channel string) (int64, error) {
	var last sql.NullInt64
	if err := s.pool.QueryRow(ctx, `SELECT max(update_id) FROM channel_updates WHERE channel = $1`, channel).Scan(&last); err != nil {
		return 0, fmt.Errorf("next %s update: %w", channel, err)
	}
	if !last.Valid {
		return 0, nil
	}
	return last.Int64 + 1, nil
}

// FirstRefusal records a refusal of chat on day and reports whether it
// is that day's first.
func (s *Store) FirstRefusal(ctx context.Context, channel string, chat int64, day string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO channel_refusals (channel, chat_id, day) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, channel, chat, day)
	if err != nil {
		return false, fmt.Errorf("record %s refusal: %w", channel, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ChatSession is the session key a chat was moved to, "" if none.
func (s *Store) ChatSession(ctx context.Context, channel string, chat int64) (string, error) {
	var key string
	err := s.pool.QueryRow(ctx, `SELECT session_key FROM channel_sessions WHERE channel = $1 AND chat_id = $2`,
		channel, chat).Scan(&key)
	if noRows(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("chat session: %w", err)
	}
	return key, nil
}

// SetChatSession moves a chat to another session key.
func (s *Store) SetChatSession(ctx context.Context, channel string, chat int64, key string) error {
	if err := record.CheckKey("session key", key); err != nil {
		return fmt.Errorf("set chat session: %w", err)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO channel_sessions (channel, chat_id, session_key) VALUES ($1, $2, $3)
		ON CONFLICT (channel, chat_id) DO UPDATE SET session_key = EXCLUDED.session_key`, channel, chat, key)
	if err != nil {
		return fmt.Errorf("set chat session: %w", err)
	}
	return nil
}
