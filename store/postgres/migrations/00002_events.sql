-- Every kept event of every session, under its per-session sequence
-- number (see store/sqlite/migrations/00002_events.sql). The primary key
-- makes a number taken twice fail with a unique violation, which the
-- store reports as event.ErrSeqTaken, across any number of processes.

-- +goose Up
CREATE TABLE events (
    session_key TEXT COLLATE "C" NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq > 0),
    type        TEXT   NOT NULL,
    agent       TEXT   NOT NULL,
    time        BIGINT NOT NULL,
    line        TEXT   NOT NULL,
    PRIMARY KEY (session_key, seq)
);

-- +goose Down
DROP TABLE events;
