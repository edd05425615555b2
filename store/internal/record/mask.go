package record

import (
	"encoding/json"
	"slices"

	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
)

// Masker masks secrets in every piece of free text a store is given
// before writing it: message text and blocks, a run's task,
// configuration, result and error, a pending spawn's configuration and
// rationale, memory content and tags. Each write method masks its value
// on its own copy, before the first statement; identifiers, keys,
// statuses and numbers are not free text and are left alone. Events are
// masked by the event hub before they reach AppendEvents (the Log, every
// sink and every subscriber see the same masked event), so a store does
// not mask them a second time.
type Masker struct {
	// Redactor masks the secrets; nil masks nothing.
	Redactor *redact.Redactor
	// Clean, when set, makes a masked text storable, and also a label
	// that is not masked (a message's sender, a memory's source).
	Clean func(string) string
	// CleanJSON, when set, makes a masked JSON value storable.
	CleanJSON func(json.RawMessage) json.RawMessage
}

// Text masks one free text and cleans it.
func (k Masker) Text(v string) string {
	if k.Redactor != nil {
		v = k.Redactor.String(v)
	}
	return k.label(v)
}

// JSON masks one JSON value and cleans it.
func (k Masker) JSON(raw json.RawMessage) json.RawMessage {
	if k.Redactor != nil {
		raw = k.Redactor.JSON(raw)
	}
	if k.CleanJSON != nil {
		raw = k.CleanJSON(raw)
	}
	return raw
}

// label cleans a text that is not masked.
func (k Masker) label(v string) string {
	if k.Clean != nil {
		return k.Clean(v)
	}
	return v
}

// Message masks a message's text and blocks in place (and cleans its
// sender).
func (k Masker) Message(m *store.Message) {
	m.Text = k.Text(m.Text)
	if k.Clean != nil {
		m.Sender = k.Clean(m.Sender)
	}
	m.Blocks = k.JSON(m.Blocks)
}

// Run masks a new run's task, configuration, result and error in place.
func (k Masker) Run(r *store.Run) {
	r.Task = k.Text(r.Task)
	r.Config = k.JSON(r.Config)
	r.Result = k.JSON(r.Result)
	r.Error = k.Text(r.Error)
}

// Finish returns a masked copy of fin (nil for nil): its result, error
// and messages. The caller's finish and messages are not changed.
func (k Masker) Finish(fin *store.RunFinish) *store.RunFinish {
	if fin == nil {
		return nil
	}
	out := *fin
	out.Result = k.JSON(fin.Result)
	out.Error = k.Text(fin.Error)
	out.Messages = slices.Clone(fin.Messages)
	for i := range out.Messages {
		k.Message(&out.Messages[i])
	}
	return &out
}

// Pending masks a pending spawn's configuration and rationale in place.
func (k Masker) Pending(p *store.PendingSpawn) {
	p.Config = k.JSON(p.Config)
	p.Rationale = k.Text(p.Rationale)
}

// Memory masks a memory's content and tags in place (a new slice of
// tags: the caller's is not changed) and cleans its source.
func (k Masker) Memory(m *store.Memory) {
	m.Content = k.Text(m.Content)
	if k.Clean != nil {
		m.Source = k.Clean(m.Source)
	}
	tags := make([]string, len(m.Tags))
	for i, t := range m.Tags {
		tags[i] = k.Text(t)
	}
	m.Tags = tags
}
