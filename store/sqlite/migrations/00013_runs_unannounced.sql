-- The runs whose result a parent session is still owed, indexed by
-- themselves: every process start and every periodic recovery looks for
-- them (Unannounced), and without the index that read every row of runs,
-- results and all, a cost that grew with the data root's history.

-- +goose Up
CREATE INDEX runs_unannounced ON runs (ended_at, created_at) WHERE announced = 0 AND parent_session != '';

-- +goose Down
DROP INDEX runs_unannounced;
