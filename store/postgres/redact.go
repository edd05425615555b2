package postgres

import (
	"slices"

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

// maskMessage masks a message's text and blocks in place.
func (s *Store) maskMessage(m *store.Message) {
	m.Text = s.redactor.String(m.Text)
	m.Blocks = s.redactor.JSON(m.Blocks)
}

// maskRun masks a new run's task, configuration, result and error in
// place.
func (s *Store) maskRun(r *store.Run) {
	r.Task = s.redactor.String(r.Task)
	r.Config = s.redactor.JSON(r.Config)
	r.Result = s.redactor.JSON(r.Result)
	r.Error = s.redactor.String(r.Error)
}

// maskFinish returns a masked copy of fin (nil for nil): its result,
// error and messages. The caller's finish and messages are not changed.
func (s *Store) maskFinish(fin *store.RunFinish) *store.RunFinish {
	if fin == nil {
		return nil
	}
	out := *fin
	out.Result = s.redactor.JSON(fin.Result)
	out.Error = s.redactor.String(fin.Error)
	out.Messages = slices.Clone(fin.Messages)
	for i := range out.Messages {
		s.maskMessage(&out.Messages[i])
	}
	return &out
}

// maskPending masks a pending spawn's configuration and rationale in
// place.
func (s *Store) maskPending(p *store.PendingSpawn) {
	p.Config = s.redactor.JSON(p.Config)
	p.Rationale = s.redactor.String(p.Rationale)
}

// maskMemory masks a memory's content and tags in place (a new slice of
// tags: the caller's is not changed).
func (s *Store) maskMemory(m *store.Memory) {
	m.Content = s.redactor.String(m.Content)
	tags := make([]string, len(m.Tags))
	for i, t := range m.Tags {
		tags[i] = s.redactor.String(t)
	}
	m.Tags = tags
}
