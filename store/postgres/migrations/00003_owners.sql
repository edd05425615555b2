-- Run ownership (see store/sqlite/migrations/00003_owners.sql).

-- +goose Up
CREATE TABLE instances (
    id           TEXT COLLATE "C" PRIMARY KEY,
    host         TEXT   NOT NULL,
    pid          BIGINT NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

ALTER TABLE runs ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX runs_owner_active ON runs (owner) WHERE status IN ('pending', 'running');

-- +goose Down
DROP INDEX runs_owner_active;
ALTER TABLE runs DROP COLUMN owner;
DROP TABLE instances;
