-- The report a session owes the person when its background subagents
-- have ended (issue 40): last_result_id is the newest [Subagent] message
-- announced into the session, reported_through the newest one a report
-- turn claimed (ClaimReport). A session whose last_result_id is ahead
-- is owed a report; the partial index finds those at every recovery
-- sweep without reading the other sessions. Sessions stored before have
-- 0 and 0: nothing owed.

-- +goose Up
ALTER TABLE sessions ADD COLUMN last_result_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN reported_through BIGINT NOT NULL DEFAULT 0;
CREATE INDEX sessions_unreported ON sessions (key) WHERE last_result_id > reported_through;

-- +goose Down
DROP INDEX sessions_unreported;
ALTER TABLE sessions DROP COLUMN reported_through;
ALTER TABLE sessions DROP COLUMN last_result_id;
