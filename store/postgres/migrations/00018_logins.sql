-- The web panel's logins (see store/sqlite/migrations/00014_logins.sql):
-- every gateway of the cluster finds a login and sees it revoked.

-- +goose Up
CREATE TABLE logins (
    id          TEXT COLLATE "C" PRIMARY KEY,
    cookie_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    secret_hash TEXT COLLATE "C" NOT NULL,
    user_agent  TEXT   NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX logins_expiry ON logins (expires_at);

-- +goose Down
DROP INDEX logins_expiry;
DROP TABLE logins;
