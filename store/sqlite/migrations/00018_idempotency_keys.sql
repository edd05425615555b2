-- Idempotency keys (issue 39 item 6; docs/api.md, "Idempotency-Key").
--
-- A spawn or a chat message sent with an Idempotency-Key header records
-- the key here in the same transaction as what it made (the run, the
-- proposal), so the two land together or not at all: a client that
-- retries after a lost answer gets the first result, never a second
-- run. The primary key makes two concurrent requests with one key a
-- race that exactly one wins. result names what the first request made
-- (a run's short ID, a proposal's ID, a session key); request_hash is
-- the request's content, so the same key with another body is refused.
-- Keys are kept 24 hours (store.IdempotencyTTL) and deleted when a new
-- one is recorded after that. Times are Unix nanoseconds.

-- +goose Up
CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    result       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP INDEX idempotency_keys_created;
DROP TABLE idempotency_keys;
