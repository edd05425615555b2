package event

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/avaagent/ava/internal/jsonstr"
)

// Encoding an event.
//
// An event is encoded for every write of it: the store's line, the audit
// log, the session file, each live stream. Under a thousand subagents at
// once that was a large share of Ava's CPU per run, as encoding/json
// reached the wire form by reflection and then validated, compacted and
// escaped its own output once more. AppendJSON writes the same bytes
// directly: strings escaped as encoding/json escapes them by default
// (HTML-safe: <, > and & as \u003c…, U+2028 and U+2029 escaped, invalid
// UTF-8 as U+FFFD), the fields and omitempty rules of the wire struct,
// numbers as encoding/json writes them, and the content compacted and
// escaped the same way, or taken as it is when it already is so.

// AppendJSON appends the event's audit log form (its MarshalJSON) to dst.
// It fails, leaving dst's contents as they were, when the content is not
// valid JSON or the cost is not a finite number.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	start := len(dst)
	b := append(dst, '{')
	if e.Seq != 0 {
		b = strconv.AppendUint(append(b, `"seq":`...), e.Seq, 10)
		b = append(b, ',')
	}
	b = append(b, `"timestamp":"`...)
	b = append(appendTime(b, e.Time), '"')
	b = jsonstr.Append(append(b, `,"sessionId":`...), e.Session, true)
	b = jsonstr.Append(append(b, `,"agentId":`...), e.Agent, true)
	if e.User != "" {
		b = jsonstr.Append(append(b, `,"userId":`...), e.User, true)
	}
	b = jsonstr.Append(append(b, `,"eventType":`...), string(e.Type), true)
	b, err := appendContent(append(b, `,"content":`...), e.Content)
	if err != nil {
		return dst[:start], err
	}
	b, err = e.Meta.appendJSON(append(b, `,"metadata":`...))
	if err != nil {
		return dst[:start], err
	}
	return append(b, '}'), nil
}

// appendTime appends t in TimeLayout, in UTC: written digit by digit
// for years 0–9999, by time.AppendFormat otherwise.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1e6, 3)
	return append(b, 'Z')
}

// appendDigits appends n (0 ≤ n < 10^width) as width decimal digits.
func appendDigits(b []byte, n, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		b = append(b, 0)
	}
	for i := len(b) - 1; width > 0; i, width = i-1, width-1 {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

// appendJSON appends m as encoding/json writes it: the fields in order,
// those with a zero value left out.
func (m Meta) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	open := len(b)
	field := func(name string) {
		if len(b) > open {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), name...), `":`...)
	}
	if m.InputTokens != 0 {
		field("inputTokens")
		b = strconv.AppendInt(b, int64(m.InputTokens), 10)
	}
	if m.OutputTokens != 0 {
		field("outputTokens")
		b = strconv.AppendInt(b, int64(m.OutputTokens), 10)
	}
	if m.CostCents != 0 {
		if math.IsInf(m.CostCents, 0) || math.IsNaN(m.CostCents) {
			return b, fmt.Errorf("encode event metadata: costCents %v is not a finite number", m.CostCents)
		}
		field("costCents")
		b = appendFloat(b, m.CostCents)
	}
	if m.ModelID != "" {
		field("modelId")
		b = jsonstr.Append(b, m.ModelID, true)
	}
	if m.ParentAgentID != "" {
		field("parentAgentId")
		b = jsonstr.Append(b, m.ParentAgentID, true)
	}
	if m.DurationMs != 0 {
		field("durationMs")
		b = strconv.AppendInt(b, m.DurationMs, 10)
	}
	return append(b, '}'), nil
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// decimal form, with an exponent (of at least one digit) below 1e-6 and
// from 1e21 on.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendContent appends an event's content as encoding/json writes a
// json.RawMessage: {} when empty, compacted and HTML-escaped. Content
// that needs neither (what json.Marshal produced, mostly) is checked to
// be valid and copied.
func appendContent(b []byte, c json.RawMessage) ([]byte, error) {
	if len(c) == 0 {
		return append(b, "{}"...), nil
	}
	if json.Valid(c) && compactAndSafe(c) {
		return append(b, c...), nil
	}
	// Not valid (json.Marshal says why), or spaced or HTML-unsafe:
	// encoding/json's own compaction, which escapes as it goes.
	out, err := json.Marshal(c)
	if err != nil {
		return b, fmt.Errorf("encode event content: %w", err)
	}
	return append(b, out...), nil
}

// compactAndSafe reports whether valid JSON c has no white space outside
// its strings and nothing encoding/json would escape (<, >, &, U+2028,
// U+2029) inside them.
func compactAndSafe(c []byte) bool {
	inString := false
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case '"':
			inString = !inString
		case '\\':
			i++ // only inside a string in valid JSON: skip the escaped byte
		case ' ', '\t', '\n', '\r':
			if !inString {
				return false
			}
		case '<', '>', '&':
			return false
		case 0xE2:
			if i+2 < len(c) && c[i+1] == 0x80 && c[i+2]&^1 == 0xA8 {
				return false
			}
		}
	}
	return true
}
