-- Resume after a crash: a run whose process died may be taken over by
-- another process and resumed from its stored conversation (its role
-- allows it); attempts counts those takeovers, so that a run that keeps
-- crashing its process is interrupted (quarantined) instead of being
-- revived in a loop.

-- +goose Up
ALTER TABLE runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0);

-- +goose Down
ALTER TABLE runs DROP COLUMN attempts;
