package gateway

import (
	"net/http"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// listFindings answers GET /api/groups/{id}/findings: the group's
// board, oldest first (none for a group without findings).
func (s *Server) listFindings(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "group")
	if err != nil {
		fail(w, err)
		return
	}
	fs, err := s.rt.Findings(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	out := client.FindingList{GroupID: id, Findings: make([]client.Finding, 0, len(fs))}
	for _, f := range fs {
		out.Findings = append(out.Findings, toClientFinding(f))
	}
	writeJSON(w, http.StatusOK, out)
}

func toClientFinding(f ava.Finding) client.Finding {
	return client.Finding{ID: f.ID, SubagentID: f.SubagentID, Role: f.Role, Text: f.Text, PostedAt: f.PostedAt}
}
