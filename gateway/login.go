package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// maxLoginBody bounds POST /api/login's body (a code is 32 characters).
const maxLoginBody = 4 << 10

// LoginLink returns a one-time link that logs a browser in to the web
// panel: http://ADDR/#login=CODE. The code is in the fragment, which a
// browser never sends: the panel's script reads it, takes it out of the
// address bar and trades it for a login at POST /api/login, once; an
// unused code expires after LoginCodeTTL.
func (s *Server) LoginLink() (string, error) {
	code, err := s.auth.issueCode()
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(s.opt.Addr)
	if err != nil {
		return "", fmt.Errorf("login link for %q: %w", s.opt.Addr, err)
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/#login=" + code, nil
}

// index answers GET /: the panel's page, whatever its query (a login
// code comes in the fragment, which the browser keeps to itself).
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	s.panel.ServeHTTP(w, r)
}

// login answers POST /api/login: with the token as a bearer token (the
// panel asks the person for it) or a one-time code in the body (a login
// link), it creates a web panel login, sets its session cookie and
// answers its secret (client.LoginResult), which the panel sends in the
// X-Ava-Login header from then on. Anything else is a 401.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.auth.bearer(r) {
		var req client.LoginRequest
		if err := decode(w, r, maxLoginBody, &req); err != nil {
			refuse(w, r, "log in with the daemon's token as a bearer token, or a one-time code {\"code\": …} from the link ava panel prints")
			return
		}
		if req.Code == "" || !s.auth.redeem(req.Code) {
			refuse(w, r, "this login link was already used or has expired: run ava panel for a new one, "+
				"or enter the token (the data root's "+tokenFileHint+", or AVA_TOKEN)")
			return
		}
	}
	authenticated(r.Context())
	c, res, err := s.auth.newLogin(r.Context(), r.UserAgent())
	if err != nil {
		fail(w, err)
		return
	}
	http.SetCookie(w, c)
	writeJSON(w, http.StatusOK, res)
}

// logout answers POST /api/logout: the panel login the request came with
// is revoked, in every process, and its cookie dropped. With the token
// there is no login to end.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r.Context())
	if c.login == nil {
		writeJSON(w, http.StatusOK, client.LoggedOut{})
		return
	}
	if err := s.rt.Logins().RevokeLogin(r.Context(), c.login.ID); err != nil && !errors.Is(err, ava.ErrNotFound) {
		fail(w, err)
		return
	}
	http.SetCookie(w, s.auth.clearCookie())
	writeJSON(w, http.StatusOK, client.LoggedOut{LoggedOut: true})
}

// listLogins answers GET /api/logins: the web panel logins not expired,
// newest first.
func (s *Server) listLogins(w http.ResponseWriter, r *http.Request) {
	all, err := s.rt.Logins().Logins(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	cur := callerOf(r.Context()).login
	now := s.auth.now()
	out := client.PanelLoginList{Logins: []client.PanelLogin{}}
	for _, l := range all {
		if !now.Before(l.ExpiresAt) {
			continue
		}
		out.Logins = append(out.Logins, client.PanelLogin{ID: l.ID, UserAgent: l.UserAgent, CreatedAt: l.CreatedAt,
			ExpiresAt: l.ExpiresAt, Current: cur != nil && cur.ID == l.ID})
	}
	writeJSON(w, http.StatusOK, out)
}

// revokeLogin answers DELETE /api/logins/{id}: that login ends at once,
// in every process (404 when there is none).
func (s *Server) revokeLogin(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.rt.Logins().RevokeLogin(r.Context(), id); err != nil {
		if errors.Is(err, ava.ErrNotFound) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no web panel login %q (GET /api/logins lists them)", id))
			return
		}
		fail(w, err)
		return
	}
	if cur := callerOf(r.Context()).login; cur != nil && cur.ID == id {
		http.SetCookie(w, s.auth.clearCookie())
	}
	writeJSON(w, http.StatusOK, client.Revoked{Revoked: 1})
}

// revokeLogins answers DELETE /api/logins: every web panel login ends.
func (s *Server) revokeLogins(w http.ResponseWriter, r *http.Request) {
	n, err := s.rt.Logins().RevokeLogins(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	if callerOf(r.Context()).login != nil {
		http.SetCookie(w, s.auth.clearCookie())
	}
	writeJSON(w, http.StatusOK, client.Revoked{Revoked: n})
}

// loginLink answers POST /api/login/link: a new one-time link for a
// browser (ava panel).
func (s *Server) loginLink(w http.ResponseWriter, r *http.Request) {
	link, err := s.LoginLink()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"link": link})
}
