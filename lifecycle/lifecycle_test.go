package lifecycle_test

import (
	"errors"
	"testing"

	"github.com/avaagent/ava/lifecycle"
)

func TestTable(t *testing.T) {
	allowed := map[[2]lifecycle.Status]bool{}
	finals := []lifecycle.Status{lifecycle.Success, lifecycle.Timeout, lifecycle.CostExceeded,
		lifecycle.TokensExceeded, lifecycle.IterationsExceeded, lifecycle.Cancelled, lifecycle.Error, lifecycle.Interrupted}
	allow := func(from lifecycle.Status, to ...lifecycle.Status) {
		for _, s := range to {
			allowed[[2]lifecycle.Status{from, s}] = true
		}
	}
	allow(lifecycle.Queued, append([]lifecycle.Status{lifecycle.Pending, lifecycle.Running}, finals...)...)
	allow(lifecycle.Pending, append([]lifecycle.Status{lifecycle.Running}, finals...)...)
	allow(lifecycle.Running, finals...)
	for _, f := range finals {
		allow(f, lifecycle.Running, lifecycle.Queued)
	}
	for _, from := range lifecycle.All {
		for _, to := range lifecycle.All {
			want := allowed[[2]lifecycle.Status{from, to}]
			if got := lifecycle.CanMove(from, to); got != want {
				t.Errorf("CanMove(%s, %s) = %v, want %v", from, to, got, want)
			}
			err := lifecycle.Check(from, to)
			if (err == nil) != want || (err != nil && !errors.Is(err, lifecycle.ErrInvalidTransition)) {
				t.Errorf("Check(%s, %s) = %v", from, to, err)
			}
		}
	}
	if lifecycle.CanMove(lifecycle.Success, lifecycle.Pending) {
		t.Error("success → pending allowed")
	}
	if lifecycle.CanMove("bogus", lifecycle.Running) || lifecycle.CanMove(lifecycle.Running, "") {
		t.Error("an unknown status moves")
	}
	if err := lifecycle.Check("bogus", lifecycle.Running); err == nil || errors.Is(err, lifecycle.ErrInvalidTransition) {
		t.Errorf("Check(bogus, running) = %v, want a plain error", err)
	}
}

func TestFinalAndParse(t *testing.T) {
	for _, s := range lifecycle.All {
		if s.Final() == s.IsActive() {
			t.Errorf("%s: final %v, active %v", s, s.Final(), s.IsActive())
		}
		if p, err := lifecycle.Parse(string(s)); err != nil || p != s {
			t.Errorf("Parse(%s) = %v, %v", s, p, err)
		}
	}
	if lifecycle.Status("").Final() || lifecycle.Status("done").Final() {
		t.Error("an unknown status is final")
	}
	if _, err := lifecycle.Parse("done"); err == nil {
		t.Error("Parse(done) succeeded")
	}
}

// Every final status reads in seed 002's words with a reason that gives
// it back; an active one has none; Ava's own words (older lines) read
// back as they are.
func TestSeedWordsRoundTrip(t *testing.T) {
	for _, s := range lifecycle.All {
		word, reason := s.Seed()
		if !s.Final() {
			if word != "" || reason != "" {
				t.Errorf("%s: %q %q, want none", s, word, reason)
			}
			continue
		}
		switch {
		case s == lifecycle.Success && (word != lifecycle.SeedCompleted || reason != ""),
			(s == lifecycle.Cancelled || s == lifecycle.Interrupted) && word != lifecycle.SeedAborted,
			s != lifecycle.Success && s != lifecycle.Cancelled && s != lifecycle.Interrupted && word != lifecycle.SeedFailed:
			t.Errorf("%s: %q", s, word)
		}
		if back := lifecycle.FromSeed(word, reason); back != s {
			t.Errorf("%s → %q/%q → %s", s, word, reason, back)
		}
		if back := lifecycle.FromSeed(string(s), ""); back != s {
			t.Errorf("old word %s → %s", s, back)
		}
	}
}
