package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/session"
	"github.com/avaagent/ava/store"
)

// target is a resolved session key.
type target struct {
	key string
	// subagentID is set for a subagent's session.
	subagentID string
}

// resolve finds a session: a subagent key by its run (ID or unique
// prefix, live or stored), a main key by its stored session, its stored
// events or a turn running now. An unknown key is store.ErrNotFound.
func (s *Server) resolve(ctx context.Context, key string) (target, error) {
	if err := session.CheckKey(key); err != nil {
		return target{}, fmt.Errorf("sessionKey: %w", err)
	}
	if session.IsSubagentKey(key) {
		id, err := s.subagentID(ctx, key[strings.LastIndex(key, ":")+1:])
		if err != nil {
			return target{}, err
		}
		return target{key: store.SubagentSessionPrefix + id, subagentID: id}, nil
	}
	_, err := s.in.Store.GetSession(ctx, key)
	if err == nil {
		return target{key: key}, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return target{}, err
	}
	if s.in.Sessions.State(key) != session.Idle {
		return target{key: key}, nil
	}
	if last, err := s.in.Store.LastSeq(ctx, key); err == nil && last > 0 {
		return target{key: key}, nil
	}
	return target{}, fmt.Errorf("session %s: %w", key, store.ErrNotFound)
}

// subagentID resolves a subagent ID or unique prefix to its short ID: a
// run this daemon holds, else a stored one.
func (s *Server) subagentID(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", badRequestf("subagent ID: empty")
	}
	h, err := s.in.Subagent.Get(id)
	if err == nil {
		return h.ID(), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	run, err := s.in.Store.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	return run.ShortID, nil
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
	ctx := context.WithoutCancel(r.Context())
	t, err := s.chatTarget(ctx, req.SessionKey)
	if err != nil {
		fail(w, err)
		return
	}
	if req.Steer && t.subagentID == "" {
		fail(w, badRequestf("steer: only a subagent (ava:subagent:S-…) can be steered; a main session's message joins or follows its turn"))
		return
	}
	last, err := s.in.Store.LastSeq(ctx, t.key)
	if err != nil {
		fail(w, fmt.Errorf("session %s: %w", t.key, err))
		return
	}
	sub := s.in.Sessions.Follow(t.key, last)
	turn, err := s.in.Sessions.Send(ctx, t.key, req.Message, session.SendOptions{Queue: req.Queue, Steer: req.Steer, Merge: !session.IsSubagentKey(t.key)})
	if err != nil {
		sub.Close()
		fail(w, err)
		return
	}
	s.track(turn.Done())
	sw := s.startStream(w, t.key)
	if err := sw.named(client.EventSession, client.ChatStart{SessionKey: t.key, Queued: turn.Queued()}); err != nil {
		sub.Close() // follow would have
		s.releaseFrames(t.key)
		return
	}
	if _, err := s.follow(r.Context(), sw, t.key, sub, turn.Done()); err != nil {
		return
	}
	res, _ := turn.Wait(r.Context())
	_ = sw.named(client.EventDone, res)
}

// chatTarget resolves the key of a message: an existing session, a
// new main session under a key the client chose (created by the
// message, session.Service.Send, if session.CheckNewKey allows the key),
// or a new web session when no key is given.
func (s *Server) chatTarget(ctx context.Context, key string) (target, error) {
	if key == "" {
		return target{key: "ava:web:" + uuid.NewString()[:8]}, nil
	}
	t, err := s.resolve(ctx, key)
	if errors.Is(err, store.ErrNotFound) && !session.IsSubagentKey(key) {
		if err := session.CheckNewKey(key); err != nil {
			return target{}, fmt.Errorf("sessionKey: %w", err)
		}
		return target{key: key}, nil
	}
	return t, err
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
	if t.subagentID != "" {
		if _, err := s.in.Subagent.Get(t.subagentID); errors.Is(err, store.ErrNotFound) {
			// Stored, not held here: it ended, or another process runs it.
			run, err := s.in.Store.GetRun(r.Context(), t.subagentID)
			if err != nil {
				fail(w, err)
				return
			}
			if !run.Status.Final() {
				fail(w, fmt.Errorf("stop %s: %w: it is %s in another process", t.subagentID, session.ErrBusy, run.Status))
				return
			}
			writeJSON(w, http.StatusOK, client.StopResponse{SessionKey: t.key})
			return
		}
	}
	stopped, err := s.in.Sessions.Stop(t.key)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, client.StopResponse{SessionKey: t.key, Stopped: stopped})
}
