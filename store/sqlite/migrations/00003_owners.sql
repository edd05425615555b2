-- Run ownership: each process that runs subagents registers an instance
-- and keeps its heartbeat fresh; each run names the instance running it.
-- A run is only marked interrupted when its owner is gone.

-- +goose Up
CREATE TABLE instances (
    id           TEXT    PRIMARY KEY,
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
) STRICT;

ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_owner_active ON runs (owner) WHERE status IN ('pending', 'running');

-- +goose Down
DROP INDEX runs_owner_active;
ALTER TABLE runs DROP COLUMN owner;
DROP TABLE instances;
