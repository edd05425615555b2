package event

import (
	"bytes"
	"encoding/json"
)

// maxHeld bounds the streamed text a journal holds back: past it, the
// text is released (masked) whatever it ends with.
const maxHeld = 64 << 10

// deltaTypes are the live-only types that stream text piece by piece,
// in the order held text is released.
var deltaTypes = [...]Type{ThinkingDelta, TextDelta}

// isDelta reports whether t streams text piece by piece.
func isDelta(t Type) bool { return t == TextDelta || t == ThinkingDelta }

// heldText is streamed text a journal has not released yet, with the
// last delta it came in (for the released event's session, agent and
// time).
type heldText struct {
	text []byte
	last Event
}

// A hub with a redactor masks streamed text before subscribers see it.
// A secret may arrive split across deltas, which no redactor could see
// piece by piece, so a journal holds back the end of the streamed text
// that could still be the start of a secret (the last word, a word that
// follows "name:" or "Bearer", a private key block not yet closed) and
// releases the rest masked. Whatever it holds is released, masked, before
// the session's next event of another type: subscribers see the same
// text, in the same order, only in different pieces.

// holdDelta adds a delta's text to what the journal holds and returns
// the event that releases what is now safe to show, or false when
// nothing is. Called with j.mu held.
func (j *Journal) holdDelta(ev Event, r Redactor) (Event, bool) {
	var c TextContent
	if err := json.Unmarshal(ev.Content, &c); err != nil {
		return Event{}, false // not text: nothing to show either
	}
	if j.held == nil {
		j.held = map[Type]*heldText{}
	}
	h := j.held[ev.Type]
	if h == nil {
		h = &heldText{}
		j.held[ev.Type] = h
	}
	h.text = append(h.text, c.Text...)
	h.last = ev
	cut := safeCut(h.text)
	if len(h.text) >= maxHeld {
		cut = len(h.text)
	}
	if cut == 0 {
		return Event{}, false
	}
	out := releasedDelta(ev, r.Redact(h.text[:cut]))
	h.text = append(h.text[:0], h.text[cut:]...)
	return out, true
}

// releaseHeld appends every held text but that of type except to the
// window, masked, as one delta per type: before an event of another
// type, so that the order of events is kept. Called with j.mu held.
func (j *Journal) releaseHeld(r Redactor, except Type) {
	for _, t := range deltaTypes {
		h := j.held[t]
		if t == except || h == nil || len(h.text) == 0 {
			continue
		}
		j.emitLocked(releasedDelta(h.last, r.Redact(h.text)))
		h.text = h.text[:0]
	}
}

// releasedDelta is a delta like ev carrying text.
func releasedDelta(ev Event, text []byte) Event {
	raw, err := json.Marshal(TextContent{Text: string(text)})
	if err != nil {
		raw = []byte(`{"text":""}`)
	}
	ev.Content = raw
	return ev
}

// safeCut returns how much of the streamed text b can be released: up
// to and including the last white space that does not follow a sign
// (':' or '='), the word "bearer" or a secret-looking name, and that
// comes before any private key block not yet closed. 0 means hold
// everything.
func safeCut(b []byte) int {
	limit := len(b)
	if i := bytes.LastIndex(b, []byte("-----BEGIN")); i >= 0 && !closedBlock(b[i:]) {
		limit = i
	}
	for k := limit - 1; k >= 0; k-- {
		if !isSpace(b[k]) {
			continue
		}
		if releasableAfter(b[:k]) {
			return k + 1
		}
	}
	return 0
}

// closedBlock reports whether the block starting b has its END line.
func closedBlock(b []byte) bool {
	i := bytes.Index(b, []byte("-----END"))
	return i >= 0 && bytes.Contains(b[i+len("-----END"):], []byte("-----"))
}

// releasableAfter reports whether the text before a white space can be
// released, that is whether the word after it can stand alone: not if
// the text ends with a sign, the word "bearer" or a secret-looking name.
func releasableAfter(before []byte) bool {
	before = bytes.TrimRight(before, " \t\r\n")
	if len(before) == 0 {
		return true
	}
	if c := before[len(before)-1]; c == ':' || c == '=' {
		return false
	}
	word := before[bytes.LastIndexAny(before, " \t\r\n")+1:]
	for _, end := range heldWordEnds {
		if len(word) >= len(end) && bytes.EqualFold(word[len(word)-len(end):], []byte(end)) {
			return false
		}
	}
	return true
}

// heldWordEnds end the words after which the next word is held back:
// "Bearer" and names like secrets' ("aws_secret_access_key = …").
var heldWordEnds = []string{"bearer", "key", "token", "secret", "pass", "passwd", "pwd", "password", "key_base"}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }
