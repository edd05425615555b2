-- Idempotency keys (issue 39 item 6); the same as
-- store/sqlite/migrations/00018_idempotency_keys.sql.

-- +goose Up
CREATE TABLE idempotency_keys (
    scope        TEXT COLLATE "C" NOT NULL,
    key          TEXT COLLATE "C" NOT NULL,
    request_hash TEXT NOT NULL,
    result       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
