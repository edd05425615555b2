-- Hook delivery IDs unique for good, and a run's deliveries in order
-- (see store/sqlite/migrations/00016_hook_delivery_ids.sql; the same).
--
-- delivery_id is a UUIDv7: existing rows get one whose time part is
-- their created_at and whose random part is gen_random_uuid()'s; the
-- column's default draws one from the clock for a row inserted without
-- one (by an ava older than this migration, beside a newer one in a
-- cluster). COLLATE "C" compares bytes, so a prefix is a range of the
-- unique index.
--
-- run_id is the body's jobId ('' when it has none): the body is the
-- compact JSON Ava wrote, read here with a pattern rather than a cast,
-- so a body that is not JSON cannot fail the migration.

-- +goose Up
ALTER TABLE hook_deliveries ADD COLUMN delivery_id TEXT COLLATE "C";
ALTER TABLE hook_deliveries ADD COLUMN run_id TEXT COLLATE "C" NOT NULL DEFAULT '';

UPDATE hook_deliveries SET delivery_id = overlay(gen_random_uuid()::text
    placing (substr(lpad(to_hex(created_at / 1000000), 12, '0'), 1, 8) || '-' ||
             substr(lpad(to_hex(created_at / 1000000), 12, '0'), 9, 4) || '-7') from 1 for 15);

UPDATE hook_deliveries SET run_id = (regexp_match(body, '"jobId":"([^"\\]*)"'))[1]
WHERE body ~ '"jobId":"[^"\\]*"';

ALTER TABLE hook_deliveries ALTER COLUMN delivery_id SET NOT NULL;
ALTER TABLE hook_deliveries ALTER COLUMN delivery_id SET DEFAULT overlay(gen_random_uuid()::text
    placing (substr(lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0'), 1, 8) || '-' ||
             substr(lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0'), 9, 4) || '-7') from 1 for 15);

CREATE UNIQUE INDEX hook_deliveries_delivery_id ON hook_deliveries (delivery_id);
CREATE INDEX hook_deliveries_run_order ON hook_deliveries (hook_id, run_id, host, id)
    WHERE status IN ('pending', 'failed') AND run_id <> '';

-- +goose Down
DROP INDEX hook_deliveries_run_order;
DROP INDEX hook_deliveries_delivery_id;
ALTER TABLE hook_deliveries DROP COLUMN run_id;
ALTER TABLE hook_deliveries DROP COLUMN delivery_id;
