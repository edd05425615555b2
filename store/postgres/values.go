package postgres

import (
	"strconv"
	"strings"
)

// Times are stored as BIGINT Unix nanoseconds, as in SQLite: they
// round-trip exactly (timestamptz keeps microseconds) and sort correctly.

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
