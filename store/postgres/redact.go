package postgres

import (
	"encoding/json"
	"strings"

	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store/internal/record"
)

// The store masks secrets in every piece of free text it is given before
// writing it, as SQLite's does (see Options.Redactor and record.Masker).
//
// PostgreSQL's TEXT holds only valid UTF-8 without NUL, where SQLite
// keeps any bytes: the same free text is also made storable here, each
// NUL and invalid byte sequence becoming U+FFFD (a tool's output of a
// binary file would otherwise fail the whole write), and so are a
// message's sender and a memory's source.

// masker masks with r (nothing when nil) and cleans what it masks.
func masker(r *redact.Redactor) record.Masker {
	if r == nil {
		r = &redact.Redactor{}
	}
	return record.Masker{Redactor: r, Clean: storable, CleanJSON: storableJSON}
}

// storableJSON cleans one JSON value. Invalid bytes of valid JSON can
// only be inside its strings, so it stays valid JSON; a raw NUL is
// invalid JSON, refused as in SQLite.
func storableJSON(raw json.RawMessage) json.RawMessage {
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
