package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/gateway/client"
)

// resolve finds a session (ava.Runtime.Resolve).
func (s *Server) resolve(ctx context.Context, key string) (ava.SessionRef, error) {
	return s.rt.Resolve(ctx, key)
}

// chat answers POST /api/chat: it sends the message and answers with
// the session's stream until the turn ends, then a done event.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	if s.isDraining() {
		fail(w, errDraining)
		return
	}
	var req client.ChatRequest
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	if strings.TrimSpace(req.Message) == "" {
		fail(w, badRequestf("message: empty"))
		return
	}
	if len(req.Message) > maxMessage {
		fail(w, badRequestf("message: over %d bytes", maxMessage))
		return
	}
	if r.Header.Get(client.IdempotencyKeyHeader) != "" {
		// Refused rather than ignored: a client that counts on it must
		// not think its retries are safe.
		fail(w, badRequestf("%s: POST /api/chat does not take idempotency keys yet (POST /api/subagents does); "+
			"send the message without it, and check the session's stream before sending it again", client.IdempotencyKeyHeader))
		return
	}
	// Finding the session and handing it the message are bounded by the
	// API's deadline (a paused database answers 503, and the message is
	// not taken); the turn, once taken, runs on if the client leaves,
	// and the stream that follows it is not bounded.
	ctx, cancel := s.withDeadline(r.Context())
	defer cancel()
	t, err := s.chatTarget(ctx, req.SessionKey)
	if err != nil {
		fail(w, passedDeadline(ctx, err))
		return
	}
	message, err := s.rt.WithAttachments(ctx, req.Message, req.Attachments)
	if err != nil {
		fail(w, err)
		return
	}
	turn, sub, err := s.rt.Chat(ctx, t.Key, message, ava.SendOptions{Queue: req.Queue, Steer: req.Steer, Merge: t.SubagentID == ""})
	if err != nil {
		fail(w, passedDeadline(ctx, busyError(t, err)))
		return
	}
	cancel()
	s.track(turn.Done())
	sw := s.startStream(w, t.Key)
	if err := sw.named(client.EventSession, client.ChatStart{SessionKey: t.Key, Queued: turn.Queued()}); err != nil {
		sub.Close() // follow would have
		s.releaseFrames(t.Key)
		return
	}
	if _, err := s.follow(r.Context(), sw, t.Key, sub, turn.Done()); err != nil {
		return
	}
	res, _ := turn.Wait(r.Context())
	_ = sw.named(client.EventDone, res)
}

// busyError words a refusal of a busy session or subagent (409) in the
// API's terms: what this request can ask instead (the "queue" and
// "steer" fields, POST /api/chat/stop), not the core's options the API
// does not offer. Other errors pass unchanged.
func busyError(t ava.SessionRef, err error) error {
	if ava.KindOf(err) != ava.Busy {
		return err
	}
	if t.SubagentID == "" {
		return fmt.Errorf("%s: a turn is running (%w): send the message again with \"queue\": true to run it when the turn ends, "+
			"or stop the turn (POST /api/chat/stop)", t.Key, ava.ErrBusy)
	}
	if strings.Contains(err.Error(), "on a worker") {
		return fmt.Errorf("%s is running on a worker (%w): send the message again with \"steer\": true to deliver it before its next model call, "+
			"or stop it (POST /api/chat/stop)", t.SubagentID, ava.ErrBusy)
	}
	return fmt.Errorf("%s is running (%w): send the message again with \"steer\": true to deliver it before its next model call, "+
		"\"queue\": true to run it when its turn ends, or stop it (POST /api/chat/stop)", t.SubagentID, ava.ErrBusy)
}

// chatTarget is the session a message goes to (ava.Runtime.Target): an
// existing one, a new one under a key the client chose, or a new web
// session when no key is given.
func (s *Server) chatTarget(ctx context.Context, key string) (ava.SessionRef, error) {
	return s.rt.Target(ctx, key, "web")
}

// stop answers POST /api/chat/stop.
func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	var req client.StopRequest
	if err := decode(w, r, s.opt.MaxBody, &req); err != nil {
		fail(w, err)
		return
	}
	t, err := s.resolve(r.Context(), req.SessionKey)
	if err != nil {
		fail(w, err)
		return
	}
	stopped, err := s.rt.Stop(r.Context(), t.Key)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, client.StopResponse{SessionKey: t.Key, Stopped: stopped})
}
