-- What each session spent, by source and model (see
-- store/sqlite/migrations/00006_session_spend.sql).

-- +goose Up
CREATE TABLE session_spend (
    session_key TEXT COLLATE "C" NOT NULL,
    source      TEXT NOT NULL CHECK (source IN ('own', 'subagents')),
    model       TEXT COLLATE "C" NOT NULL,
    tokens      BIGINT           NOT NULL DEFAULT 0,
    cost_cents  DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (session_key, source, model)
);
INSERT INTO session_spend (session_key, source, model, tokens, cost_cents)
    SELECT parent_session, 'subagents', model, SUM(tokens), SUM(cost_cents)
    FROM runs WHERE parent_session <> '' AND status NOT IN ('queued', 'pending', 'running')
    GROUP BY parent_session, model;

-- +goose Down
DROP TABLE session_spend;
