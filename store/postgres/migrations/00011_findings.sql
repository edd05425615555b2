-- Boards (mirrors SQLite's 00010): the findings the members of a
-- parallel group or a chain share (post_finding, read_findings). Keyed by
-- the group's ID; within a group id increases in the order findings are
-- committed (PostFinding holds the group's advisory lock while it draws
-- the id and inserts), so a reader asks for those after the last one it
-- saw. run_id and short_id name the posting run, role its role; text is
-- masked and bounded by the store.

-- +goose Up
CREATE TABLE findings (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_id   TEXT   NOT NULL CHECK (group_id <> ''),
    run_id     TEXT   NOT NULL CHECK (run_id <> ''),
    short_id   TEXT   NOT NULL,
    role       TEXT   NOT NULL,
    text       TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX findings_group ON findings (group_id, id);

-- +goose Down
DROP TABLE findings;
