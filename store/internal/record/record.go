// Package record is what the SQL stores (store/sqlite, store/postgres) do
// to a record outside SQL: it validates a run, message, pending spawn,
// memory or event and fills in its defaults, masks its free text with
// the redactor, converts times and JSON to and from column values, and
// turns memory search text into terms; it also scans their rows (both
// drivers' rows have the same Scan). Each store keeps its own SQL and
// driver code; the rules a record passes are written once, here, so the
// two stores cannot drift apart.
package record

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// MaxKeyLen bounds session keys and other caller-chosen identifiers.
const MaxKeyLen = 512

// Times are stored as 64-bit integer Unix nanoseconds in both stores:
// they round-trip exactly and sort correctly.

// ToNS returns t as Unix nanoseconds.
func ToNS(t time.Time) int64 { return t.UnixNano() }

// FromNS returns the UTC time of ns Unix nanoseconds.
func FromNS(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// NullNS returns t as nullable Unix nanoseconds, NULL for nil or zero.
func NullNS(t *time.Time) sql.NullInt64 {
	if t == nil || t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: ToNS(*t), Valid: true}
}

// TimePtr returns the time of nullable Unix nanoseconds, nil for NULL.
func TimePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := FromNS(n.Int64)
	return &t
}

// OrNow returns t, or now() when t is zero.
func OrNow(t time.Time, now func() time.Time) time.Time {
	if t.IsZero() {
		return now()
	}
	return t
}

// JSONArg validates raw and returns it as a text argument, NULL when
// empty; field names it in the error.
func JSONArg(field string, raw json.RawMessage) (sql.NullString, error) {
	if len(raw) == 0 {
		return sql.NullString{}, nil
	}
	if !json.Valid(raw) {
		return sql.NullString{}, fmt.Errorf("%s is not valid JSON", field)
	}
	return sql.NullString{String: string(raw), Valid: true}, nil
}

// RawJSON returns a nullable text column as JSON, nil for NULL.
func RawJSON(n sql.NullString) json.RawMessage {
	if !n.Valid {
		return nil
	}
	return json.RawMessage(n.String)
}

// CheckKey refuses an empty or oversized identifier, naming it.
func CheckKey(what, key string) error {
	if strings.TrimSpace(key) == "" {
		return fmt.Errorf("%s is %w", what, store.ErrEmpty)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%s is %d bytes long, more than %d", what, len(key), MaxKeyLen)
	}
	return nil
}

// CheckAmount refuses a negative, NaN or infinite amount of cents.
func CheckAmount(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s must be a finite number >= 0, got %v", what, v)
	}
	return nil
}

// CheckCount refuses a negative counter.
func CheckCount(what string, v int) error {
	if v < 0 {
		return fmt.Errorf("%s must be >= 0, got %d", what, v)
	}
	return nil
}

// CheckCounters refuses negative tokens or iterations and a cost that is
// not a finite number >= 0, naming each.
func CheckCounters(tokens int, cost float64, iterations int) error {
	return errors.Join(CheckCount("tokens", tokens), CheckAmount("cost", cost), CheckCount("iterations", iterations))
}

// JoinStatuses joins statuses with sep, for messages.
func JoinStatuses(ss []lifecycle.Status, sep string) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, sep)
}

// ActiveStatuses is the SQL list of the active statuses, ('queued', …),
// built from lifecycle.Active (constants, never input).
var ActiveStatuses = func() string {
	quoted := make([]string, len(lifecycle.Active))
	for i, s := range lifecycle.Active {
		quoted[i] = "'" + string(s) + "'"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}()
