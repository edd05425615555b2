package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway/client"
)

// sseWriter writes Server-Sent Events to one response.
type sseWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	frames *frameCache
	armed  time.Time // when the write deadline was last set
	buf    []byte    // the frames of a batch (events)
}

// startStream sends the headers of an event stream for key.
func (s *Server) startStream(w http.ResponseWriter, key string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set(client.SessionKeyHeader, key)
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), frames: s.frames(key)}
	_ = sw.rc.Flush()
	return sw
}

// writeTimeout bounds one write to a stream: a client that stops reading
// without hanging up is dropped instead of holding its handler.
const writeTimeout = 30 * time.Second

// rearm is how old a write deadline may be before the next write sets it
// again: a busy stream moves its deadline (a timer operation) a few
// times a minute, not once a write, so a write has between
// writeTimeout-rearm and writeTimeout to finish.
const rearm = writeTimeout / 6

// deadline arms the write deadline of the next write.
func (sw *sseWriter) deadline() {
	now := time.Now()
	if now.Sub(sw.armed) < rearm {
		return
	}
	sw.armed = now
	_ = sw.rc.SetWriteDeadline(now.Add(writeTimeout))
}

// named writes one of the daemon's own events (no id).
func (sw *sseWriter) named(name string, v any) error {
	sw.deadline()
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	frame := make([]byte, 0, len(b)+len(name)+16)
	frame = append(append(append(frame, "event: "...), name...), "\ndata: "...)
	frame = append(append(frame, b...), "\n\n"...)
	if _, err := sw.w.Write(frame); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// batchBytes is how much of a batch of frames a stream gathers before
// handing it to the response in one piece; keepBytes is the most of
// that memory a stream keeps between batches (a live batch's worth, not
// a replay's: a thousand idle streams keep 4 MiB at most).
const (
	batchBytes = 32 << 10
	keepBytes  = 4 << 10
)

// events writes session events and flushes once. The frames are
// gathered first and handed to the response in one piece (up to
// batchBytes), so that a batch goes out as one HTTP chunk, copied once,
// instead of one per response buffer's worth.
func (sw *sseWriter) events(evs []event.Event) error {
	sw.deadline()
	buf := sw.buf[:0]
	for i, ev := range evs {
		buf = append(buf, sw.frames.frame(ev)...)
		if len(buf) >= batchBytes || i == len(evs)-1 {
			if _, err := sw.w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if cap(buf) <= keepBytes {
		sw.buf = buf // kept for the next batch; a larger one is let go
	}
	return sw.rc.Flush()
}

// heartbeat writes a comment line.
func (sw *sseWriter) heartbeat() error {
	sw.deadline()
	if _, err := sw.w.Write([]byte(": heartbeat\n\n")); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// encodeFrame is one event as an SSE message: id (kept events only),
// event type, and the event's JSON (audit form) as data.
func encodeFrame(ev event.Event) []byte {
	frame := make([]byte, 0, 256+len(ev.Content))
	if ev.Seq > 0 {
		frame = append(strconv.AppendUint(append(frame, "id: "...), ev.Seq, 10), '\n')
	}
	frame = append(append(append(frame, "event: "...), ev.Type...), "\ndata: "...)
	frame, err := ev.AppendJSON(frame)
	if err != nil {
		frame = append(frame, `{"error":"event not encodable"}`...)
	}
	return append(frame, "\n\n"...)
}

// frameRing is how many encoded kept events a session's cache holds.
const frameRing = 1024

// frameCache holds the encoded frames of a session's recent kept events,
// so that many streams of one session encode each event once.
type frameCache struct {
	mu   sync.Mutex
	refs int
	seqs [frameRing]uint64
	bufs [frameRing][]byte
}

func (c *frameCache) frame(ev event.Event) []byte {
	if ev.Seq == 0 {
		return encodeFrame(ev)
	}
	i := ev.Seq % frameRing
	c.mu.Lock()
	if c.seqs[i] == ev.Seq {
		b := c.bufs[i]
		c.mu.Unlock()
		return b
	}
	c.mu.Unlock()
	b := encodeFrame(ev)
	c.mu.Lock()
	c.seqs[i], c.bufs[i] = ev.Seq, b
	c.mu.Unlock()
	return b
}

// frames returns key's shared frame cache; release it with
// releaseFrames.
func (s *Server) frames(key string) *frameCache {
	s.framesMu.Lock()
	defer s.framesMu.Unlock()
	c := s.frameCaches[key]
	if c == nil {
		c = &frameCache{}
		s.frameCaches[key] = c
	}
	c.refs++
	return c
}

func (s *Server) releaseFrames(key string) {
	s.framesMu.Lock()
	defer s.framesMu.Unlock()
	if c := s.frameCaches[key]; c != nil {
		if c.refs--; c.refs <= 0 {
			delete(s.frameCaches, key)
		}
	}
}

// follow writes key's events from sub until ctx is done, the stream
// breaks, or, when turnDone is given, the turn has ended and every event
// stored by then is written. A GET stream (turnDone nil) also ends when
// the server drains. It returns the last kept number written. It owns
// sub and closes it.
//
// One goroutine (the request's) reads the subscription and writes: a
// new event costs each stream one wakeup, and a stream that is behind
// writes everything waiting in one write and one flush. A stream writes
// at most once every flushEvery: the first event after a quiet spell
// goes out at once, a stream of them in one write per flushEvery.
func (s *Server) follow(ctx context.Context, sw *sseWriter, key string, sub *event.Subscription, turnDone <-chan struct{}) (uint64, error) {
	defer s.releaseFrames(key)
	defer sub.Close()
	s.metrics.subscribers.Inc()
	defer s.metrics.subscribers.Dec()
	cursor, target, finishing := sub.Cursor(), uint64(0), false

	draining := s.draining
	if turnDone != nil {
		draining = nil // a turn's stream runs until the turn ends
	}
	hb := time.NewTicker(s.opt.Heartbeat)
	defer hb.Stop()
	var wrote time.Time
	for {
		evs, wake, err := sub.Ready(ctx)
		if err != nil {
			return cursor, err
		}
		if len(evs) > 0 {
			if err := sw.events(evs); err != nil {
				return cursor, err
			}
			wrote = time.Now()
			for _, ev := range evs {
				cursor = max(cursor, ev.Seq)
			}
			if finishing && cursor >= target {
				return cursor, nil
			}
		}
		select {
		case <-wake:
			if d := flushEvery - time.Since(wrote); d > 0 {
				time.Sleep(d) // let what follows join this write
			}
		case <-turnDone:
			turnDone, finishing = nil, true
			last, err := s.rt.LastSeq(ctx, key)
			if err != nil {
				return cursor, fmt.Errorf("stream: %w", err)
			}
			if target = last; cursor >= target {
				return cursor, nil
			}
		case <-hb.C:
			if err := s.auth.recheck(ctx); err != nil {
				return cursor, err // its login was revoked or expired
			}
			if err := sw.heartbeat(); err != nil {
				return cursor, err
			}
		case <-draining:
			return cursor, errDraining
		case <-ctx.Done():
			return cursor, ctx.Err()
		}
	}
}

// flushEvery is the shortest time between two writes to one stream:
// under load, each subscriber's events go out in one write and one
// wakeup of its reader per flushEvery instead of one per event (a write
// to a socket is most of a delivery's cost), at the price of delaying an
// event by at most flushEvery. 10 ms is below what a person sees (a
// screen's frame is 16 ms).
const flushEvery = 10 * time.Millisecond

// stream answers GET /api/chat/stream?sessionKey=K[&after=SEQ]; a
// Last-Event-ID header wins over after.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	if s.isDraining() {
		fail(w, errDraining)
		return
	}
	after, fromNow, err := streamAfter(r)
	if err != nil {
		fail(w, err)
		return
	}
	// The reads before the stream starts are bounded by the API's
	// deadline; the stream itself is not.
	pre, cancel := s.withDeadline(r.Context())
	defer cancel()
	t, err := s.resolve(pre, r.URL.Query().Get("sessionKey"))
	if err != nil {
		fail(w, passedDeadline(pre, err))
		return
	}
	last, err := s.rt.LastSeq(pre, t.Key)
	if err != nil {
		fail(w, passedDeadline(pre, err))
		return
	}
	if fromNow {
		after = last
	}
	if after > last {
		// Resuming after a number the session never had (another data
		// root, a mistyped id) would wait for ever in silence.
		fail(w, badRequestf("the stream resumes after %d, but session %s has %d events so far", after, t.Key, last))
		return
	}
	sub := s.rt.Follow(t.Key, after)
	sw := s.startStream(w, t.Key)
	_, err = s.follow(r.Context(), sw, t.Key, sub, nil)
	var ended unauthorized
	switch {
	case err == nil || r.Context().Err() != nil || errors.Is(err, errDraining):
	case errors.As(err, &ended):
		s.log.Info("stream ended: its web panel login ended", "session", t.Key)
	default:
		s.log.Warn("stream ended", "session", t.Key, "err", err)
	}
}

// streamAfter is the number a stream resumes after: Last-Event-ID, else
// the after parameter, else 0; fromNow when it is after=now (the
// session's current end, which the caller looks up).
func streamAfter(r *http.Request) (after uint64, fromNow bool, err error) {
	v, name := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, name = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, false, nil
	}
	if v == "now" && name == "after" {
		return 0, true, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, false, badRequestf("%s %q: want a sequence number (0 or more)", name, v)
	}
	return n, false, nil
}
