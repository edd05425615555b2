package ava

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/avaagent/ava/store"
)

// Finding is one entry of a group's board: what a member of a parallel
// group or a chain shared with the others (post_finding;
// docs/sharing.md). Its text is another agent's, masked and bounded by
// the store: show it as untrusted text.
type Finding struct {
	// ID increases in the order the group's findings were posted.
	ID         int64     `json:"id"`
	GroupID    string    `json:"groupId"`
	SubagentID string    `json:"subagentId"`
	Role       string    `json:"role"`
	Text       string    `json:"text"`
	PostedAt   time.Time `json:"postedAt"`
}

// Findings returns the board of the group (a Subagent's GroupID),
// oldest first: every member's findings, on whichever process of a
// cluster it ran. A group without findings, or unknown, has none; an
// empty group ID is ErrInvalid.
func (r *Runtime) Findings(ctx context.Context, group string) ([]Finding, error) {
	group = strings.TrimSpace(group)
	if group == "" {
		return nil, invalidf("group ID: empty")
	}
	fs, err := r.in.Subagent.Board(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("findings: %w", err)
	}
	return fromFindings(fs), nil
}

// Board is the group's board so far (Runtime.Findings).
func (g *Group) Board(ctx context.Context) ([]Finding, error) {
	return g.r.Findings(ctx, g.g.ID)
}

func fromFindings(fs []store.Finding) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = Finding{ID: f.ID, GroupID: f.GroupID, SubagentID: f.ShortID, Role: f.Role, Text: f.Text, PostedAt: f.CreatedAt}
	}
	return out
}
