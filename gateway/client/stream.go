package client

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
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
}

func newStream(resp *http.Response) *Stream {
	return &Stream{resp: resp, r: bufio.NewReaderSize(resp.Body, 64<<10), SessionKey: resp.Header.Get(SessionKeyHeader)}
}

// Next returns the next event, skipping comments (heartbeats). It
// returns io.EOF when the daemon ends the stream.
func (s *Stream) Next() (Event, error) {
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
func (s *Stream) Close() error { return s.resp.Body.Close() }
