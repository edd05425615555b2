// Package confirm holds the rules of two-phase spawning that need nothing
// else of Ava: the confirmation policy (AVA_CONFIRM) and the parser that
// turns a person's free-text answer to a spawn proposal into a decision.
//
// The parser is conservative by design: only an answer it recognises as a
// yes, a no, or a yes with changes it can apply is a decision; anything
// else is Unclear and must be asked again. Nothing unclear is ever taken
// as a yes.
package confirm

import (
	"fmt"
	"strconv"
	"strings"
)

// Ask says when a spawn needs the person's confirmation. The zero value
// is Never, so a library user who sets nothing gets spawns that start at
// once; the configuration's default (AVA_CONFIRM) is Always.
type Ask int

// When to ask.
const (
	// Never starts every spawn at once.
	Never Ask = iota
	// Always makes every spawn a proposal first.
	Always
	// Above asks only when the estimated maximum cost is above
	// Policy.AboveCents.
	Above
)

// Policy is a parsed AVA_CONFIRM value.
type Policy struct {
	Ask        Ask
	AboveCents float64
}

// ParsePolicy parses "always" (also ""), "never" or "above:<cents>".
func ParsePolicy(s string) (Policy, error) {
	switch s = strings.TrimSpace(s); {
	case s == "always" || s == "":
		return Policy{Ask: Always}, nil
	case s == "never":
		return Policy{Ask: Never}, nil
	case strings.HasPrefix(s, "above:"):
		v, err := strconv.ParseFloat(strings.TrimPrefix(s, "above:"), 64)
		if err != nil || v < 0 {
			return Policy{}, fmt.Errorf("confirm: %q: the cents after above: must be a non-negative number", s)
		}
		return Policy{Ask: Above, AboveCents: v}, nil
	}
	return Policy{}, fmt.Errorf("confirm: %q: use always, never or above:<cents>", s)
}

// Asks reports whether a spawn whose estimated maximum cost is
// maxCostCents needs confirmation.
func (p Policy) Asks(maxCostCents float64) bool {
	switch p.Ask {
	case Always:
		return true
	case Above:
		return maxCostCents > p.AboveCents
	}
	return false
}

// String is the policy as AVA_CONFIRM spells it.
func (p Policy) String() string {
	switch p.Ask {
	case Always:
		return "always"
	case Above:
		return "above:" + strconv.FormatFloat(p.AboveCents, 'f', -1, 64)
	}
	return "never"
}
