-- Queued runs (see store/sqlite/migrations/00004_queued.sql). PostgreSQL
-- changes the CHECK constraint in place where SQLite rebuilds the table.

-- +goose Up
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN ('queued', 'pending', 'running', 'success',
    'timeout', 'cost_exceeded', 'tokens_exceeded', 'iterations_exceeded',
    'cancelled', 'error', 'interrupted'));
DROP INDEX runs_owner_active;
CREATE INDEX runs_owner_active ON runs (owner) WHERE status IN ('queued', 'pending', 'running');

-- +goose Down
-- The wider CHECK stays; runs still queued end as interrupted.
UPDATE runs SET status = 'interrupted', ended_at = created_at WHERE status = 'queued';
DROP INDEX runs_owner_active;
CREATE INDEX runs_owner_active ON runs (owner) WHERE status IN ('pending', 'running');
