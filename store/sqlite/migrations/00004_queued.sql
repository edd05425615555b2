-- Queued runs: a run may wait for a concurrency slot with status
-- 'queued' (package lifecycle). SQLite cannot change a CHECK constraint,
-- so the runs table is rebuilt with the same columns and indexes, and
-- the partial index of active runs by owner covers queued runs too (a
-- gone owner's queued runs are interrupted like its running ones).

-- +goose Up
CREATE TABLE runs_new (
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
    status         TEXT    NOT NULL CHECK (status IN ('queued', 'pending', 'running', 'success',
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
    announced      INTEGER NOT NULL DEFAULT 0 CHECK (announced IN (0, 1)),
    owner          TEXT    NOT NULL DEFAULT ''
) STRICT;

INSERT INTO runs_new (id, short_id, session_key, parent_session, parent_agent, group_id, mode, role, task, model,
    config, status, result, error, tokens, cost_cents, iterations, created_at, started_at, ended_at, announced, owner)
SELECT id, short_id, session_key, parent_session, parent_agent, group_id, mode, role, task, model,
    config, status, result, error, tokens, cost_cents, iterations, created_at, started_at, ended_at, announced, owner
FROM runs ORDER BY rowid;

DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;

CREATE UNIQUE INDEX runs_short_id ON runs (short_id);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_parent ON runs (parent_session, created_at);
CREATE INDEX runs_status ON runs (status);
CREATE INDEX runs_owner_active ON runs (owner) WHERE status IN ('queued', 'pending', 'running');

-- +goose Down
-- The wider CHECK stays; runs still queued end as interrupted.
UPDATE runs SET status = 'interrupted', ended_at = created_at WHERE status = 'queued';
DROP INDEX runs_owner_active;
CREATE INDEX runs_owner_active ON runs (owner) WHERE status IN ('pending', 'running');
