-- Every kept event of every session, under its per-session sequence
-- number: the durable record the event hub numbers against and replays
-- from. line is the event's audit JSON form (redacted by the caller).
-- sessions.last_seq stays for data roots written before this table:
-- a session's last number is the larger of the two.

-- +goose Up
CREATE TABLE events (
    session_key TEXT    NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    type        TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    time        INTEGER NOT NULL,
    line        TEXT    NOT NULL,
    PRIMARY KEY (session_key, seq)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE events;
