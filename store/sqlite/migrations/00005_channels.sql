-- Chat channels (Telegram): the updates each channel received, so that
-- none is lost or handled twice across a restart, where it resumes, and
-- the once-a-day refusals of chats that are not allowed.

-- +goose Up
CREATE TABLE channel_updates (
    channel     TEXT    NOT NULL,
    update_id   INTEGER NOT NULL,
    chat_id     INTEGER NOT NULL,
    payload     TEXT    NOT NULL,
    done        INTEGER NOT NULL DEFAULT 0,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (channel, update_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX channel_updates_pending ON channel_updates (channel, done, update_id);

CREATE TABLE channel_refusals (
    channel TEXT    NOT NULL,
    chat_id INTEGER NOT NULL,
    day     TEXT    NOT NULL,
    PRIMARY KEY (channel, chat_id, day)
) STRICT, WITHOUT ROWID;

-- The session a chat talks to, once it started a fresh one (/new).
CREATE TABLE channel_sessions (
    channel     TEXT    NOT NULL,
    chat_id     INTEGER NOT NULL,
    session_key TEXT    NOT NULL,
    PRIMARY KEY (channel, chat_id)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE channel_sessions;
DROP TABLE channel_refusals;
DROP INDEX channel_updates_pending;
DROP TABLE channel_updates;
