-- Ava's store on PostgreSQL, first schema: the same tables and
-- constraints as store/sqlite/migrations/00001_init.sql. Times are BIGINT
-- Unix nanoseconds (UTC), as in SQLite, so they round-trip exactly; JSON
-- values are TEXT, stored byte for byte as given; identifiers that are
-- sorted or matched by prefix are COLLATE "C", which compares bytes as
-- SQLite's BINARY does, whatever the database's locale.
--
-- Every SQLite migration has a PostgreSQL twin with the same version
-- number: a new one there must be mirrored here.

-- +goose Up
CREATE TABLE sessions (
    key          TEXT COLLATE "C" PRIMARY KEY,
    created_at   BIGINT           NOT NULL,
    updated_at   BIGINT           NOT NULL,
    budget_cents DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (budget_cents >= 0),
    spent_cents  DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_seq     BIGINT           NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
);

CREATE TABLE messages (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_key TEXT COLLATE "C" NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
    role        TEXT   NOT NULL CHECK (role IN ('user', 'assistant', 'subagent')),
    sender      TEXT   NOT NULL,
    text        TEXT   NOT NULL,
    blocks      TEXT,
    run_id      TEXT   NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL
);

CREATE INDEX messages_session ON messages (session_key, id);

-- position is the insertion order (SQLite's rowid), the tie-break of
-- runs created in the same nanosecond.
CREATE TABLE runs (
    id             TEXT COLLATE "C" PRIMARY KEY,
    short_id       TEXT COLLATE "C" NOT NULL,
    session_key    TEXT COLLATE "C" NOT NULL,
    parent_session TEXT COLLATE "C" NOT NULL DEFAULT '',
    parent_agent   TEXT    NOT NULL DEFAULT '',
    group_id       TEXT    NOT NULL DEFAULT '',
    mode           TEXT    NOT NULL CHECK (mode IN ('single', 'parallel', 'chain')),
    role           TEXT    NOT NULL,
    task           TEXT    NOT NULL,
    model          TEXT    NOT NULL DEFAULT '',
    config         TEXT,
    status         TEXT    NOT NULL CONSTRAINT runs_status_check CHECK (status IN ('pending', 'running', 'success',
                       'timeout', 'cost_exceeded', 'tokens_exceeded', 'iterations_exceeded',
                       'cancelled', 'error', 'interrupted')),
    result         TEXT,
    error          TEXT    NOT NULL DEFAULT '',
    tokens         BIGINT  NOT NULL DEFAULT 0,
    cost_cents     DOUBLE PRECISION NOT NULL DEFAULT 0,
    iterations     BIGINT  NOT NULL DEFAULT 0,
    created_at     BIGINT  NOT NULL,
    started_at     BIGINT,
    ended_at       BIGINT,
    announced      BOOLEAN NOT NULL DEFAULT FALSE,
    position       BIGINT  GENERATED ALWAYS AS IDENTITY UNIQUE
);

CREATE UNIQUE INDEX runs_short_id ON runs (short_id);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_parent ON runs (parent_session, created_at);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE pending_spawns (
    id                   TEXT COLLATE "C" PRIMARY KEY,
    session_key          TEXT COLLATE "C" NOT NULL,
    config               TEXT,
    estimate_min_seconds BIGINT NOT NULL DEFAULT 0,
    estimate_max_seconds BIGINT NOT NULL DEFAULT 0,
    max_cost_cents       DOUBLE PRECISION NOT NULL DEFAULT 0,
    tools                TEXT   NOT NULL DEFAULT '[]',
    rationale            TEXT   NOT NULL DEFAULT '',
    status               TEXT   NOT NULL CHECK (status IN ('pending', 'confirmed', 'rejected', 'expired')),
    created_at           BIGINT NOT NULL,
    expires_at           BIGINT NOT NULL,
    decided_at           BIGINT,
    run_id               TEXT   NOT NULL DEFAULT ''
);

CREATE INDEX pending_spawns_session ON pending_spawns (session_key, status, created_at);
CREATE INDEX pending_spawns_expiry ON pending_spawns (status, expires_at);

-- search stands in for SQLite's memories_fts: the store writes the words
-- of content and tags (case and diacritics folded, split as FTS5's
-- unicode61 tokenizer splits them) with their positions, and queries it
-- with a tsquery it builds the same way; no text search configuration or
-- extension is involved.
CREATE TABLE memories (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    content    TEXT     NOT NULL,
    tags       TEXT     NOT NULL DEFAULT '[]',
    source     TEXT     NOT NULL DEFAULT '',
    created_at BIGINT   NOT NULL,
    search     TSVECTOR NOT NULL DEFAULT ''
);

CREATE INDEX memories_created ON memories (created_at);
CREATE INDEX memories_search ON memories USING GIN (search);

-- +goose Down
DROP TABLE memories;
DROP TABLE pending_spawns;
DROP TABLE runs;
DROP TABLE messages;
DROP TABLE sessions;
