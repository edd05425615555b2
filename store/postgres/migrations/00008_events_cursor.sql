-- PostgreSQL only (SQLite has no 00008; see docs/postgres.md, "Audit
-- log of a cluster"). The events table is the audit log of a cluster:
-- `ava logs`, GET /api/logs and read_ava_logs read it (package audit's
-- EventSource) instead of one machine's files. For that each event gets
--   - id: the order in which events were stored, the tie-break of events
--     of the same nanosecond and the key of keyset paging;
--   - xid: the transaction that stored it. Following the log polls for
--     the events of transactions below the oldest one still running
--     (pg_snapshot_xmin), a cursor that only moves past events stored for
--     good, so a follower never skips an event committed late, as an id
--     cursor could (ids are drawn before commit, and commits land out of
--     order).
-- Existing events get ids in no particular order and the migration's
-- transaction ID.

-- +goose Up
ALTER TABLE events ADD COLUMN id BIGINT GENERATED ALWAYS AS IDENTITY;
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX events_time ON events (time, id);
CREATE INDEX events_agent ON events (agent COLLATE "C", time, id);
CREATE INDEX events_xid ON events (xid);

-- +goose Down
DROP INDEX events_xid;
DROP INDEX events_agent;
DROP INDEX events_time;
ALTER TABLE events DROP COLUMN xid;
ALTER TABLE events DROP COLUMN id;
