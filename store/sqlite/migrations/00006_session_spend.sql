-- What each session spent, by who spent it (its own orchestrator turns,
-- or its subagents) and model: the roll-up of ava ps, GET /api/sessions,
-- the panel and SessionEnd. The session's spent_cents stays the budget's
-- running total. Subagent spend already recorded is carried over from the
-- runs; the orchestrator's own spend before this table is not known by
-- model and is not.

-- +goose Up
CREATE TABLE session_spend (
    session_key TEXT    NOT NULL,
    source      TEXT    NOT NULL CHECK (source IN ('own', 'subagents')),
    model       TEXT    NOT NULL,
    tokens      INTEGER NOT NULL DEFAULT 0,
    cost_cents  REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (session_key, source, model)
) STRICT, WITHOUT ROWID;
INSERT INTO session_spend (session_key, source, model, tokens, cost_cents)
    SELECT parent_session, 'subagents', model, SUM(tokens), SUM(cost_cents)
    FROM runs WHERE parent_session != '' AND status NOT IN ('queued', 'pending', 'running')
    GROUP BY parent_session, model;

-- +goose Down
DROP TABLE session_spend;
