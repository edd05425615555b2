-- Ava's store, first schema. Times are INTEGER Unix nanoseconds (UTC);
-- JSON values are TEXT; booleans are INTEGER 0/1.

-- +goose Up
CREATE TABLE sessions (
    key          TEXT    PRIMARY KEY,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    budget_cents REAL    NOT NULL DEFAULT 0 CHECK (budget_cents >= 0),
    spent_cents  REAL    NOT NULL DEFAULT 0,
    last_seq     INTEGER NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
) STRICT;

CREATE TABLE messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key TEXT    NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    role        TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'subagent')),
    sender      TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    blocks      TEXT,
    run_id      TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX messages_session ON messages (session_key, id);

CREATE TABLE runs (
    id             TEXT    PRIMARY KEY,
    short_id       TEXT    NOT NULL,
    session_key    TEXT    NOT NULL,
    parent_session TEXT    NOT NULL DEFAULT '',
    parent_agent   TEXT    NOT NULL DEFAULT '',
    group_id       TEXT    NOT NULL DEFAULT '',
    mode           TEXT    NOT NULL CHECK (mode IN ('single', 'parallel', 'chain')),
    role           TEXT    NOT NULL,
    task           TEXT    NOT NULL,
    model          TEXT    NOT NULL DEFAULT '',
    config         TEXT,
    status         TEXT    NOT NULL CHECK (status IN ('pending', 'running', 'success',
                       'timeout', 'cost_exceeded', 'tokens_exceeded', 'iterations_exceeded',
                       'cancelled', 'error', 'interrupted')),
    result         TEXT,
    error          TEXT    NOT NULL DEFAULT '',
    tokens         INTEGER NOT NULL DEFAULT 0,
    cost_cents     REAL    NOT NULL DEFAULT 0,
    iterations     INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    started_at     INTEGER,
    ended_at       INTEGER,
    announced      INTEGER NOT NULL DEFAULT 0 CHECK (announced IN (0, 1))
) STRICT;

CREATE UNIQUE INDEX runs_short_id ON runs (short_id);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_parent ON runs (parent_session, created_at);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE pending_spawns (
    id                   TEXT    PRIMARY KEY,
    session_key          TEXT    NOT NULL,
    config               TEXT,
    estimate_min_seconds INTEGER NOT NULL DEFAULT 0,
    estimate_max_seconds INTEGER NOT NULL DEFAULT 0,
    max_cost_cents       REAL    NOT NULL DEFAULT 0,
    tools                TEXT    NOT NULL DEFAULT '[]',
    rationale            TEXT    NOT NULL DEFAULT '',
    status               TEXT    NOT NULL CHECK (status IN ('pending', 'confirmed', 'rejected', 'expired')),
    created_at           INTEGER NOT NULL,
    expires_at           INTEGER NOT NULL,
    decided_at           INTEGER,
    run_id               TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX pending_spawns_session ON pending_spawns (session_key, status, created_at);
CREATE INDEX pending_spawns_expiry ON pending_spawns (status, expires_at);

CREATE TABLE memories (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    content    TEXT    NOT NULL,
    tags       TEXT    NOT NULL DEFAULT '[]',
    source     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX memories_created ON memories (created_at);

-- memories_fts indexes memories (content, and tags as their JSON array text,
-- which the tokenizer splits into words);
-- the triggers keep it in step.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, tags,
    content = 'memories', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- +goose StatementBegin
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags)
    VALUES ('delete', old.id, old.content, old.tags);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags)
    VALUES ('delete', old.id, old.content, old.tags);
    INSERT INTO memories_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE memories_fts;
DROP TABLE memories;
DROP TABLE pending_spawns;
DROP TABLE runs;
DROP TABLE messages;
DROP TABLE sessions;
