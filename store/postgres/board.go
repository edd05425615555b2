package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

const findingColumns = `id, group_id, run_id, short_id, role, text, created_at`

// PostFinding appends f to its group's board (see store.BoardStore). The
// transaction reads the posting run's row FOR SHARE to check the
// poster's lease (f.Owner), then holds the group's advisory lock while
// it counts the bounds and inserts, so members posting at once from several processes cannot
// together pass a bound, and within a group IDs are committed in order.
func (s *Store) PostFinding(ctx context.Context, f store.Finding) (store.Finding, error) {
	if err := s.rec.CheckFinding(&f); err != nil {
		return store.Finding{}, fmt.Errorf("post finding: %w", err)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if f.Owner != "" {
			fence := event.Fence{Run: f.RunID, Owner: f.Owner}
			if err := fenceHolds(tx.QueryRow(ctx, record.FenceQuery("$1", " FOR SHARE"), fence.Run), fence); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('ava:board:' || $1, 0))`, f.GroupID); err != nil {
			return fmt.Errorf("lock board: %w", err)
		}
		var perRun, perGroup int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE run_id = $1), count(*) FROM findings WHERE group_id = $2`,
			f.RunID, f.GroupID).Scan(&perRun, &perGroup); err != nil {
			return fmt.Errorf("count findings: %w", err)
		}
		if err := record.BoardFull(perRun, perGroup); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO findings (group_id, run_id, short_id, role, text, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, f.GroupID, f.RunID, f.ShortID, f.Role, f.Text, record.ToNS(f.CreatedAt)).Scan(&f.ID)
	})
	if err != nil {
		return store.Finding{}, fmt.Errorf("post finding to group %s: %w", f.GroupID, err)
	}
	return f, nil
}

// Findings returns the group's findings after the ID after, oldest
// first, without those of the run exclude when set.
func (s *Store) Findings(ctx context.Context, group string, after int64, exclude string) ([]store.Finding, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+findingColumns+` FROM findings
		WHERE group_id = $1 AND id > $2 AND run_id <> $3 ORDER BY id`, group, after, exclude)
	if err != nil {
		return nil, fmt.Errorf("findings of group %s: %w", group, err)
	}
	defer rows.Close()
	out, err := record.Collect(rows, record.ScanFinding)
	if err != nil {
		return nil, fmt.Errorf("findings of group %s: %w", group, err)
	}
	return out, nil
}
