package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/internal/record"
)

const findingColumns = `id, group_id, run_id, short_id, role, text, created_at`

// PostFinding appends f to its group's board (see store.BoardStore). The
// poster's lease (f.Owner) is checked, the bounds are counted and the
// finding inserted in one write transaction, which the single writer
// connection serialises.
func (s *Store) PostFinding(ctx context.Context, f store.Finding) (store.Finding, error) {
	if err := s.rec.CheckFinding(&f); err != nil {
		return store.Finding{}, fmt.Errorf("post finding: %w", err)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if f.Owner != "" {
			if err := checkFence(ctx, tx, event.Fence{Run: f.RunID, Owner: f.Owner}); err != nil {
				return err
			}
		}
		var perRun, perGroup int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE run_id = ?), count(*) FROM findings WHERE group_id = ?`,
			f.RunID, f.GroupID).Scan(&perRun, &perGroup); err != nil {
			return fmt.Errorf("count findings: %w", err)
		}
		if err := record.BoardFull(perRun, perGroup); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO findings (group_id, run_id, short_id, role, text, created_at)
			VALUES (?, ?, ?, ?, ?, ?) RETURNING id`, f.GroupID, f.RunID, f.ShortID, f.Role, f.Text, record.ToNS(f.CreatedAt)).Scan(&f.ID)
	})
	if err != nil {
		return store.Finding{}, fmt.Errorf("post finding to group %s: %w", f.GroupID, err)
	}
	return f, nil
}

// Findings returns the group's findings after the ID after, oldest
// first, without those of the run exclude when set.
func (s *Store) Findings(ctx context.Context, group string, after int64, exclude string) ([]store.Finding, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+findingColumns+` FROM findings
		WHERE group_id = ? AND id > ? AND run_id <> ? ORDER BY id`, group, after, exclude)
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
