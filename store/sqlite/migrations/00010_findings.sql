-- Boards: the findings the members of a parallel group or a chain share
-- (post_finding, read_findings). Keyed by the group's ID; id increases in
-- the order findings are posted, so a reader asks for those after the
-- last one it saw. run_id and short_id name the posting run, role its
-- role; text is masked and bounded by the store.

-- +goose Up
CREATE TABLE findings (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    group_id   TEXT    NOT NULL CHECK (group_id <> ''),
    run_id     TEXT    NOT NULL CHECK (run_id <> ''),
    short_id   TEXT    NOT NULL,
    role       TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX findings_group ON findings (group_id, id);

-- +goose Down
DROP TABLE findings;
