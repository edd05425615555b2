package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// Event is one Server-Sent Event of a session's stream.
type Event struct {
	// ID is the event's per-session sequence number; 0 for live-only
	// events (streamed text, activity) and the daemon's own (session,
	// done), which carry no id.
	ID uint64
	// Type is the event type (UserMessage, TextDelta, …, session, done).
	Type string
	// Data is the event: the audit-log JSON form for session events.
	Data json.RawMessage
}

// SessionEvent is the data of a session event: the audit log line's
// fields.
type SessionEvent struct {
	Seq       uint64          `json:"seq"`
	Timestamp string          `json:"timestamp"`
	SessionID string          `json:"sessionId"`
	AgentID   string          `json:"agentId"`
	EventType string          `json:"eventType"`
	Content   json.RawMessage `json:"content"`
}

// Stream reads Server-Sent Events. It is not safe for concurrent use.
type Stream struct {
	resp *http.Response
	r    *bufio.Reader
	// SessionKey is the stream's session, from the response header.
	SessionKey string

	// A chat stream (ChatWithKey) is opened again when it breaks before
	// its done event: reopen sends the request again under its key.
	ctx     context.Context
	reopen  func() (*Stream, error)
	reopens int
	last    uint64 // the highest event number returned
	started bool   // the session event was returned
	ended   bool   // the done event was returned
	closed  atomic.Bool
}

// maxReopens bounds how often a chat stream is opened again.
const maxReopens = 3

func newStream(resp *http.Response) *Stream {
	return &Stream{resp: resp, r: bufio.NewReaderSize(resp.Body, 64<<10), SessionKey: resp.Header.Get(SessionKeyHeader)}
}

// Next returns the next event, skipping comments (heartbeats). It
// returns io.EOF when the daemon ends the stream. A chat stream that
// breaks before its done event is opened again (ChatWithKey), and the
// events returned already are not returned again.
func (s *Stream) Next() (Event, error) {
	for {
		ev, err := s.read()
		if err != nil {
			if !s.again() {
				return ev, err
			}
			continue
		}
		switch {
		case ev.Type == EventSession && s.started:
			continue // the repeat's start: returned once already
		case ev.ID > 0 && ev.ID <= s.last:
			continue
		}
		s.started = s.started || ev.Type == EventSession
		s.ended = s.ended || ev.Type == EventDone
		s.last = max(s.last, ev.ID)
		return ev, nil
	}
}

// again opens a broken chat stream again, and reports whether it did.
func (s *Stream) again() bool {
	if s.reopen == nil || s.closed.Load() || s.ended || s.reopens >= maxReopens || s.ctx.Err() != nil {
		return false
	}
	s.reopens++
	n, err := s.reopen()
	if err != nil {
		return false
	}
	_ = s.resp.Body.Close()
	s.resp, s.r = n.resp, n.r
	return true
}

// read reads the next event off the wire.
func (s *Stream) read() (Event, error) {
	var ev Event
	var data []string
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && seen {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !seen {
				continue
			}
			ev.Data = json.RawMessage(strings.Join(data, "\n"))
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return ev, fmt.Errorf("stream: bad id %q", value)
			}
			ev.ID = n
		case "event":
			ev.Type = value
		case "data":
			data = append(data, value)
		}
	}
}

// Close ends the stream.
func (s *Stream) Close() error {
	s.closed.Store(true)
	return s.resp.Body.Close()
}
