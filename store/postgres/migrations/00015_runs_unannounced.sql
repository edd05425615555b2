-- The runs whose result a parent session is still owed, indexed by
-- themselves: every process start and every periodic recovery looks for
-- them (Unannounced), and without the index that read every row of runs,
-- results and all, a cost that grew with the cluster's history.

-- +goose Up
CREATE INDEX runs_unannounced ON runs (ended_at NULLS FIRST, created_at, position) WHERE NOT announced AND parent_session <> '';

-- +goose Down
DROP INDEX runs_unannounced;
