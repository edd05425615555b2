package postgres

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/avaagent/ava/store"
)

// The store masks secrets in every piece of free text it is given before
// writing it (see Options.Redactor): message text and blocks, a run's
// task, configuration, result and error, a pending spawn's configuration
// and rationale, memory content and tags. Each write method masks its
// value here, on its own copy, before the first statement; identifiers,
// keys, statuses and numbers are not free text and are left alone.
// Events are masked by the event hub before they reach AppendEvents (the
// Log, every sink and every subscriber see the same masked event), so
// the store does not mask them a second time.
//
// PostgreSQL's TEXT holds only valid UTF-8 without NUL, where SQLite
// keeps any bytes: the same free text is also made storable here, each
// NUL and invalid byte sequence becoming U+FFFD (a tool's output of a
// binary file would otherwise fail the whole write).

// text masks and cleans one free text.
func (s *Store) text(v string) string { return storable(s.redactor.String(v)) }

// json masks and cleans one JSON value. Invalid bytes of valid JSON
// can only be inside its strings, so it stays valid JSON; a raw NUL is
// invalid JSON, refused as in SQLite.
func (s *Store) json(raw json.RawMessage) json.RawMessage {
	raw = s.redactor.JSON(raw)
	if raw == nil {
		return nil
	}
	return json.RawMessage(strings.ToValidUTF8(string(raw), "\uFFFD"))
}

// storable replaces NUL and invalid UTF-8 in v with U+FFFD.
func storable(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	return strings.ReplaceAll(v, "\x00", "\uFFFD")
}

// maskMessage masks a message's text and blocks in place.
func (s *Store) maskMessage(m *store.Message) {
	m.Text = s.text(m.Text)
	m.Sender = storable(m.Sender)
	m.Blocks = s.json(m.Blocks)
}

// maskRun masks a new run's task, configuration, result and error in
// place.
func (s *Store) maskRun(r *store.Run) {
	r.Task = s.text(r.Task)
	r.Config = s.json(r.Config)
	r.Result = s.json(r.Result)
	r.Error = s.text(r.Error)
}

// maskFinish returns a masked copy of fin (nil for nil): its result,
// error and messages. The caller's finish and messages are not changed.
func (s *Store) maskFinish(fin *store.RunFinish) *store.RunFinish {
	if fin == nil {
		return nil
	}
	out := *fin
	out.Result = s.json(fin.Result)
	out.Error = s.text(fin.Error)
	out.Messages = slices.Clone(fin.Messages)
	for i := range out.Messages {
		s.maskMessage(&out.Messages[i])
	}
	return &out
}

// maskPending masks a pending spawn's configuration and rationale in
// place.
func (s *Store) maskPending(p *store.PendingSpawn) {
	p.Config = s.json(p.Config)
	p.Rationale = s.text(p.Rationale)
}

// maskMemory masks a memory's content and tags in place (a new slice of
// tags: the caller's is not changed).
func (s *Store) maskMemory(m *store.Memory) {
	m.Content = s.text(m.Content)
	m.Source = storable(m.Source)
	tags := make([]string, len(m.Tags))
	for i, t := range m.Tags {
		tags[i] = s.text(t)
	}
	m.Tags = tags
}
