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
	// Finding the session and handing it the message are bounded by the
	// API's deadline (a paused database answers 503, and the message is
	// not taken); the turn, once taken, runs on if the client leaves,
	// and the stream that follows it is not bounded.
	ctx, cancel := s.withDeadline(r.Context())
	defer cancel()
	idem := r.Header.Get(client.IdempotencyKeyHeader)
	target := req.SessionKey
	if target == "" && idem != "" {
		target = ava.KeyedSessionKey("web", idem) // a repeat goes to the same new session
	}
	t, err := s.chatTarget(ctx, target)
	if err != nil {
		fail(w, passedDeadline(ctx, err))
		return
	}
	message, err := s.rt.WithAttachments(ctx, req.Message, req.Attachments)
	if err != nil {
		fail(w, err)
		return
	}
	reply, err := s.rt.ChatOnce(ctx, t.Key, message, ava.SendOptions{Queue: req.Queue, Steer: req.Steer, Merge: t.SubagentID == "",
		IdempotencyKey: idem})
	if err != nil {
		fail(w, passedDeadline(ctx, busyError(t, err)))
		return
	}
	cancel()
	if reply.Replayed {
		w.Header().Set(client.IdempotentReplayedHeader, "true")
	}
	sw := s.startStream(w, reply.Session)
	if reply.Turn == nil {
		s.chatRecorded(sw, reply.Session)
		return
	}
	turn := reply.Turn
	s.track(turn.Done())
	start := client.ChatStart{SessionKey: reply.Session, Queued: turn.Queued(), Replayed: reply.Replayed}
	if err := sw.named(client.EventSession, start); err != nil {
		reply.Sub.Close() // follow would have
		s.releaseFrames(reply.Session)
		return
	}
	if _, err := s.follow(r.Context(), sw, reply.Session, reply.Sub, turn.Done()); err != nil {
		return
	}
	res, _ := turn.Wait(r.Context())
	_ = sw.named(client.EventDone, res)
}

// chatRecorded answers a repeated message whose turn this daemon no
// longer keeps (it ended more than 10 minutes ago, or runs in another
// process): the message was sent once, under its idempotency key, and
// is not sent again; the stream says so and ends with a done event of
// status "replayed". The turn's events are in the session's stream.
func (s *Server) chatRecorded(sw *sseWriter, key string) {
	defer s.releaseFrames(key)
	if err := sw.named(client.EventSession, client.ChatStart{SessionKey: key, Replayed: true}); err != nil {
		return
	}
	_ = sw.named(client.EventDone, client.TurnResult{Status: client.StatusReplayed, Session: key,
		Error: "this message was sent before under its idempotency key, and its turn is not running here: " +
			"its answer is in the session's stream (GET /api/chat/stream)"})
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
