package postgres

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/avaagent/ava/lifecycle"
)

// maxKeyLen bounds session keys and other caller-chosen identifiers.
const maxKeyLen = 512

// Times are stored as BIGINT Unix nanoseconds, as in SQLite: they
// round-trip exactly (timestamptz keeps microseconds) and sort correctly.

func toNS(t time.Time) int64 { return t.UnixNano() }

func fromNS(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func nullNS(t *time.Time) sql.NullInt64 {
	if t == nil || t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: toNS(*t), Valid: true}
}

func timePtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNS(n.Int64)
	return &t
}

// orNow returns t, or the store's clock when t is zero.
func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}

// jsonArg validates raw and returns it as a TEXT argument, NULL when empty.
func jsonArg(field string, raw json.RawMessage) (sql.NullString, error) {
	if len(raw) == 0 {
		return sql.NullString{}, nil
	}
	if !json.Valid(raw) {
		return sql.NullString{}, fmt.Errorf("%s is not valid JSON", field)
	}
	return sql.NullString{String: string(raw), Valid: true}, nil
}

func rawJSON(n sql.NullString) json.RawMessage {
	if !n.Valid {
		return nil
	}
	return json.RawMessage(n.String)
}

// checkKey refuses an empty or oversized identifier, naming it.
func checkKey(what, key string) error {
	if strings.TrimSpace(key) == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if len(key) > maxKeyLen {
		return fmt.Errorf("%s is %d bytes long, more than %d", what, len(key), maxKeyLen)
	}
	return nil
}

// checkAmount refuses a negative, NaN or infinite amount of cents.
func checkAmount(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s must be a finite number >= 0, got %v", what, v)
	}
	return nil
}

// checkCount refuses a negative counter.
func checkCount(what string, v int) error {
	if v < 0 {
		return fmt.Errorf("%s must be >= 0, got %d", what, v)
	}
	return nil
}

// params collects a statement's arguments and names their placeholders.
type params []any

// add appends v and returns its placeholder, $n.
func (p *params) add(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

// list appends every value of vs and returns their placeholders, "$n,
// $n+1, …".
func list[S ~string](p *params, vs []S) string {
	ph := make([]string, len(vs))
	for i, v := range vs {
		ph[i] = p.add(string(v))
	}
	return strings.Join(ph, ", ")
}

// joinStatuses joins statuses with sep, for messages.
func joinStatuses(ss []lifecycle.Status, sep string) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, sep)
}

// activeStatuses is the SQL list of the active statuses, ('queued', …),
// built from lifecycle.Active (constants, never input).
var activeStatuses = func() string {
	quoted := make([]string, len(lifecycle.Active))
	for i, s := range lifecycle.Active {
		quoted[i] = "'" + string(s) + "'"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}()
