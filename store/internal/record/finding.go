package record

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/avaagent/ava/store"
)

// CheckFinding refuses a finding without a group, a run or text, masks
// its text, cuts it to store.MaxFindingBytes (marked with
// store.CutNote) and sets its CreatedAt when zero. Masking comes first,
// so the cut never leaves half a secret.
func (c Checker) CheckFinding(f *store.Finding) error {
	if err := CheckKey("finding group", f.GroupID); err != nil {
		return err
	}
	if err := CheckKey("finding run", f.RunID); err != nil {
		return err
	}
	f.Text = strings.TrimSpace(f.Text)
	if f.Text == "" {
		return errors.New("finding text is empty")
	}
	f.Text = CutFinding(c.Mask.Text(f.Text))
	f.Role, f.ShortID = c.Mask.label(f.Role), c.Mask.label(f.ShortID)
	f.CreatedAt = c.OrNow(f.CreatedAt).UTC()
	return nil
}

// CutFinding cuts text over store.MaxFindingBytes on a rune boundary
// and ends it with store.CutNote, so that the whole stays within the
// bound.
func CutFinding(text string) string {
	if len(text) <= store.MaxFindingBytes {
		return text
	}
	n := store.MaxFindingBytes - len(store.CutNote)
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + store.CutNote
}

// BoardFull is the error of a post past a board's bounds, given how many
// findings the run and the group hold; nil when the post fits.
func BoardFull(perRun, perGroup int) error {
	switch {
	case perGroup >= store.MaxFindingsPerGroup:
		return fmt.Errorf("%w: the group's board holds %d findings, its limit", store.ErrBoardFull, perGroup)
	case perRun >= store.MaxFindingsPerRun:
		return fmt.Errorf("%w: this subagent posted %d findings, the limit for one subagent", store.ErrBoardFull, perRun)
	}
	return nil
}

// ScanFinding reads a finding's id, group_id, run_id, short_id, role,
// text and created_at.
func ScanFinding(sc Scanner) (store.Finding, error) {
	var (
		f  store.Finding
		at int64
	)
	if err := sc.Scan(&f.ID, &f.GroupID, &f.RunID, &f.ShortID, &f.Role, &f.Text, &at); err != nil {
		return store.Finding{}, err
	}
	f.CreatedAt = FromNS(at)
	return f, nil
}
