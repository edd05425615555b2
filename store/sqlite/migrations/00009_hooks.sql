-- Hook deliveries (package hooks, docs/hooks.md): one row per event and
-- hook, inserted in the transaction that stores the event (store.Outbox),
-- so that no stored event misses its deliveries and none is delivered
-- twice to one hook (the unique key). A process claims due rows with a
-- lease (lease_owner, lease_until), delivers, and records the attempt:
-- delivered, failed (tried again at next_at) or dead (attempts spent).
-- Times are Unix nanoseconds.

-- +goose Up
CREATE TABLE hook_deliveries (
    id           INTEGER PRIMARY KEY,
    hook_id      TEXT    NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('command', 'url')),
    target       TEXT    NOT NULL,
    event        TEXT    NOT NULL,
    session_key  TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    body         TEXT    NOT NULL,
    host         TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed', 'dead', 'delivered')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL CHECK (max_attempts > 0),
    next_at      INTEGER NOT NULL,
    lease_owner  TEXT    NOT NULL DEFAULT '',
    lease_until  INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    delivered_at INTEGER,
    UNIQUE (session_key, seq, hook_id)
) STRICT;
CREATE INDEX hook_deliveries_due ON hook_deliveries (status, next_at);

-- +goose Down
DROP TABLE hook_deliveries;
