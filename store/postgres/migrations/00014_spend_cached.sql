-- Cached tokens in a session's spend: the tokens of each model's spend
-- the provider read from its prompt cache (billed at the cache-read
-- rate), so the roll-up shows what caching saved. Spend recorded before
-- has none.

-- +goose Up
ALTER TABLE session_spend ADD COLUMN cached_tokens BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE session_spend DROP COLUMN cached_tokens;
