-- The web panel's logins (package gateway, docs/security.md "The daemon's
-- authentication"): a browser's session cookie and the second secret its
-- panel sends as a header, each kept only as a keyed hash. In the store,
-- so that every process on this data root finds a login and sees it
-- revoked.

-- +goose Up
CREATE TABLE logins (
    id          TEXT    PRIMARY KEY,
    cookie_hash TEXT    NOT NULL UNIQUE,
    secret_hash TEXT    NOT NULL,
    user_agent  TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX logins_expiry ON logins (expires_at);

-- +goose Down
DROP INDEX logins_expiry;
DROP TABLE logins;
