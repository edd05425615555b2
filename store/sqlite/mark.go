package sqlite

import (
	"context"
	"fmt"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

// MarkAnnounced marks a finished run's result as delivered without adding
// a message: it reached its parent another way (a waiting tool call), or
// must never reach it (a cancelled run). Marking a run twice is not an
// error. A run still pending or running gives store.ErrInvalidTransition,
// so a run cannot be marked before its result exists.
func (s *Store) MarkAnnounced(ctx context.Context, runID string) error {
	ref := record.NormalizeRunRef(runID)
	if err := record.CheckKey("run ID", ref); err != nil {
		return fmt.Errorf("mark announced: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, `UPDATE runs SET announced = 1
		WHERE (id = ? OR short_id = ?) AND status NOT IN `+record.ActiveStatuses,
		ref, ref)
	if err != nil {
		return fmt.Errorf("mark run %s announced: %w", runID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	short, status, err := s.runStatus(ctx, ref)
	if err != nil {
		return fmt.Errorf("mark announced: %w", err)
	}
	return fmt.Errorf("mark run %s announced: it is %s, not finished: %w", short, status, store.ErrInvalidTransition)
}
