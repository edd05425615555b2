package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A bounded request whose own context ends before its handler answers
// (the client went away, or a refusal closed the body's read side and
// net/http cancelled the request) answers what the handler then writes.
// Before, bounded wrote nothing and net/http sent an empty 200: a
// refused login under load read as accepted.
func TestBoundedAnswersWhatTheHandlerWritesWhenTheRequestEnds(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	s.opt.APITimeout = time.Minute
	h := s.bounded(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		writeError(w, http.StatusUnauthorized, "refused")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodPost, "/api/login", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || rec.Body.Len() == 0 {
		t.Fatalf("answered %d %q, want the handler's 401", rec.Code, rec.Body.String())
	}
}
