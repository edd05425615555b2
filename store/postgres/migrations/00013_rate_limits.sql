-- Rate-limit buckets shared by every process of a cluster (package
-- llm/ratelimit, docs/providers.md): one row per limiter key (provider,
-- API key hash, model) and dimension (0 requests, 1 input tokens, 2
-- output tokens, 3 all tokens). Each take, give back and lesson from a
-- provider's headers is one statement on the row. Times are seconds
-- since the epoch on the database's clock, so that processes on
-- machines whose clocks differ pace alike.

-- +goose Up
CREATE TABLE rate_buckets (
    key            TEXT             NOT NULL,
    dim            SMALLINT         NOT NULL,
    capacity       DOUBLE PRECISION NOT NULL DEFAULT 0,
    level          DOUBLE PRECISION NOT NULL DEFAULT 0,
    rate           DOUBLE PRECISION NOT NULL DEFAULT 0,
    updated_at     DOUBLE PRECISION NOT NULL,
    blocked_until  DOUBLE PRECISION NOT NULL DEFAULT 0,
    remaining_seen DOUBLE PRECISION NOT NULL DEFAULT -1,
    PRIMARY KEY (key, dim)
);

-- +goose Down
DROP TABLE rate_buckets;
