package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// recordIdempotency records k in tx, the transaction of what its request
// made, after deleting the keys that outlived store.IdempotencyTTL; a
// key recorded already gives store.ErrKeyUsed. Of two transactions
// recording one key, the second waits for the first and fails if it
// commits.
func (s *Store) recordIdempotency(ctx context.Context, tx pgx.Tx, k store.Idempotency) error {
	if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, record.IdempotencyCutoff(s.now())); err != nil {
		return fmt.Errorf("delete old idempotency keys: %w", err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (`+record.IdempotencyColumns+`) VALUES ($1, $2, $3, $4, $5)`,
		k.Scope, k.Key, k.RequestHash, k.Result, record.ToNS(k.CreatedAt))
	if _, dup := uniqueViolation(err); dup {
		return record.KeyUsed(k)
	}
	if err != nil {
		return fmt.Errorf("record idempotency key %q: %w", k.Key, err)
	}
	return nil
}

// GetIdempotency returns the key recorded in scope, or an error wrapping
// store.ErrNotFound when none younger than store.IdempotencyTTL is.
func (s *Store) GetIdempotency(ctx context.Context, scope, key string) (store.Idempotency, error) {
	if err := record.CheckIdempotencyKey(scope, key); err != nil {
		return store.Idempotency{}, fmt.Errorf("get idempotency key: %w", err)
	}
	k, err := record.ScanIdempotency(s.pool.QueryRow(ctx, `SELECT `+record.IdempotencyColumns+`
		FROM idempotency_keys WHERE scope = $1 AND key = $2 AND created_at >= $3`, scope, key, record.IdempotencyCutoff(s.now())))
	if noRows(err) {
		return store.Idempotency{}, fmt.Errorf("idempotency key %q (%s): %w", key, scope, store.ErrNotFound)
	}
	if err != nil {
		return store.Idempotency{}, fmt.Errorf("get idempotency key %q: %w", key, err)
	}
	return k, nil
}

// RecordIdempotency records k alone; store.ErrKeyUsed when it is
// recorded already.
func (s *Store) RecordIdempotency(ctx context.Context, k store.Idempotency) error {
	if err := s.rec.CheckIdempotency(&k, ""); err != nil {
		return fmt.Errorf("record idempotency key: %w", err)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error { return s.recordIdempotency(ctx, tx, k) })
}

// ForgetIdempotency deletes the key (scope, key) when its result is
// result.
func (s *Store) ForgetIdempotency(ctx context.Context, scope, key, result string) error {
	if err := record.CheckIdempotencyKey(scope, key); err != nil {
		return fmt.Errorf("forget idempotency key: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND result = $3`, scope, key, result); err != nil {
		return fmt.Errorf("forget idempotency key %q: %w", key, err)
	}
	return nil
}
