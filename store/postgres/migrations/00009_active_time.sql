-- Active time (mirrors SQLite's 00008): the time a run spent running,
-- summed over its turns (its first and its follow-ups), without the idle
-- time between them or the time it waited in the queue; the estimates
-- learn from it. turn_started_at is when its current (or last) turn
-- started, so that a running run's active time can be read from its
-- record alone. Runs recorded before get their first start to their
-- last end, the best figure there is.

-- +goose Up
ALTER TABLE runs ADD COLUMN active_ms BIGINT NOT NULL DEFAULT 0 CHECK (active_ms >= 0);
ALTER TABLE runs ADD COLUMN turn_started_at BIGINT;
UPDATE runs SET active_ms = greatest((ended_at - started_at) / 1000000, 0)
    WHERE started_at IS NOT NULL AND ended_at IS NOT NULL;
UPDATE runs SET turn_started_at = started_at;

-- +goose Down
ALTER TABLE runs DROP COLUMN turn_started_at;
ALTER TABLE runs DROP COLUMN active_ms;
