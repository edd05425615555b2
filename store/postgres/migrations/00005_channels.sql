-- Chat channels (see store/sqlite/migrations/00005_channels.sql).

-- +goose Up
CREATE TABLE channel_updates (
    channel     TEXT COLLATE "C" NOT NULL,
    update_id   BIGINT  NOT NULL,
    chat_id     BIGINT  NOT NULL,
    payload     TEXT    NOT NULL,
    done        BOOLEAN NOT NULL DEFAULT FALSE,
    received_at BIGINT  NOT NULL,
    PRIMARY KEY (channel, update_id)
);
CREATE INDEX channel_updates_pending ON channel_updates (channel, done, update_id);

CREATE TABLE channel_refusals (
    channel TEXT COLLATE "C" NOT NULL,
    chat_id BIGINT NOT NULL,
    day     TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (channel, chat_id, day)
);

-- The session a chat talks to, once it started a fresh one (/new).
CREATE TABLE channel_sessions (
    channel     TEXT COLLATE "C" NOT NULL,
    chat_id     BIGINT NOT NULL,
    session_key TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (channel, chat_id)
);

-- +goose Down
DROP TABLE channel_sessions;
DROP TABLE channel_refusals;
DROP INDEX channel_updates_pending;
DROP TABLE channel_updates;
