-- Hook delivery IDs unique for good, and a run's deliveries in order
-- (issue 39; docs/hooks.md, "Delivery").
--
-- delivery_id is what a hook receives as X-Ava-Delivery (and
-- AVA_HOOK_DELIVERY), and what `ava hooks` and the API show: a UUIDv7,
-- drawn at random, so a database moved aside and started afresh, or a
-- new PostgreSQL database, never gives a receiver an ID it saw before
-- (the row number id restarts at 1 in a new database; it stays the
-- claim order, never shown). The store draws it when it records the
-- delivery; existing rows get one here, its time part their created_at.
-- A row inserted without one (by an ava older than this migration,
-- beside a newer one) gets one from the trigger.
--
-- run_id is the subagent run an event belongs to (the body's jobId; ''
-- for a session's own events): a claim takes no delivery while an
-- earlier one of the same hook, run and host is pending or failed, so
-- one hook hears one run's events in order. Existing rows get it from
-- their body. The partial index finds those earlier deliveries.
--
-- Times are Unix nanoseconds.

-- +goose Up
ALTER TABLE hook_deliveries ADD COLUMN delivery_id TEXT NOT NULL DEFAULT '';
ALTER TABLE hook_deliveries ADD COLUMN run_id TEXT NOT NULL DEFAULT '';

UPDATE hook_deliveries SET delivery_id = lower(
    substr(printf('%012x', created_at / 1000000), 1, 8) || '-' ||
    substr(printf('%012x', created_at / 1000000), 9, 4) || '-7' ||
    substr(hex(randomblob(2)), 2, 3) || '-' ||
    substr('89ab', 1 + abs(random() % 4), 1) || substr(hex(randomblob(2)), 2, 3) || '-' ||
    hex(randomblob(6)));

UPDATE hook_deliveries SET run_id = json_extract(body, '$.jobId')
WHERE json_valid(body) AND json_type(body, '$.jobId') = 'text';

CREATE UNIQUE INDEX hook_deliveries_delivery_id ON hook_deliveries (delivery_id);
CREATE INDEX hook_deliveries_run_order ON hook_deliveries (hook_id, run_id, host, id)
    WHERE status IN ('pending', 'failed') AND run_id <> '';

-- +goose StatementBegin
CREATE TRIGGER hook_deliveries_delivery_id AFTER INSERT ON hook_deliveries
WHEN NEW.delivery_id = ''
BEGIN
    UPDATE hook_deliveries SET delivery_id = lower(
        substr(printf('%012x', NEW.created_at / 1000000), 1, 8) || '-' ||
        substr(printf('%012x', NEW.created_at / 1000000), 9, 4) || '-7' ||
        substr(hex(randomblob(2)), 2, 3) || '-' ||
        substr('89ab', 1 + abs(random() % 4), 1) || substr(hex(randomblob(2)), 2, 3) || '-' ||
        hex(randomblob(6)))
    WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER hook_deliveries_delivery_id;
DROP INDEX hook_deliveries_run_order;
DROP INDEX hook_deliveries_delivery_id;
ALTER TABLE hook_deliveries DROP COLUMN run_id;
ALTER TABLE hook_deliveries DROP COLUMN delivery_id;
