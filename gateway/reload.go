package gateway

import (
	"net/http"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// reload answers POST /api/reload: the daemon reads config.yaml and
// the role files again and applies what may change while it runs; a
// bad configuration changes nothing and is 400 saying what is wrong.
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	out, err := s.rt.Reload(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toClientReloaded(out, s.rt.ReloadStatus()))
}

// toClientReloaded is a reload's outcome as the API shows it.
func toClientReloaded(out ava.Reloaded, st ava.ReloadStatus) client.Reloaded {
	c := client.Reloaded{Changes: []client.ConfigChange{}, RolesAdded: nonNil(out.RolesAdded), RolesRemoved: nonNil(out.RolesRemoved),
		RolesChanged: nonNil(out.RolesChanged), MCPServers: nonNil(out.MCPServers), RoleErrors: nonNil(st.RoleErrors), Restart: nonNil(st.Restart)}
	for _, ch := range out.Changes {
		c.Changes = append(c.Changes, client.ConfigChange{Key: ch.Key, Applied: ch.Reload, Message: ch.String()})
	}
	return c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// configStatus is how the configuration stands for /readyz: nil when
// all is well.
func (s *Server) configStatus() *client.ConfigStatus {
	st := s.rt.ReloadStatus()
	if st.Error == "" && len(st.RoleErrors) == 0 && len(st.Restart) == 0 {
		return nil
	}
	return &client.ConfigStatus{Error: st.Error, RoleErrors: st.RoleErrors, Restart: st.Restart}
}

// roles answers GET /api/roles: the roles the daemon runs now, and the
// role files that do not load.
func (s *Server) roles(w http.ResponseWriter, r *http.Request) {
	out := client.RoleList{Roles: []client.Role{}, Errors: []string{}}
	for _, ro := range s.rt.Roles() {
		out.Roles = append(out.Roles, client.Role{Name: ro.Name, Description: ro.Description, Source: ro.Source, Overrides: ro.Overrides,
			Untrusted: ro.Untrusted, UntrustedWhy: ro.UntrustedWhy, Withheld: ro.Withheld, Model: ro.Model, Tools: nonNil(ro.Tools),
			MCPServers: nonNil(ro.MCPServerNames()), TimeoutMs: ro.Limits.Timeout.Milliseconds(), MaxCostCents: ro.Limits.MaxCostCents,
			MaxTokens: ro.Limits.MaxTokens, MaxIter: ro.Limits.MaxIterations})
	}
	for _, e := range s.rt.RoleErrors() {
		out.Errors = append(out.Errors, s.rt.Redactor().String(e.Error()))
	}
	writeJSON(w, http.StatusOK, out)
}
