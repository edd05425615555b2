package confirm_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/confirm"
)

func TestParse(t *testing.T) {
	yes := confirm.Answer{Decision: confirm.Confirmed}
	no := confirm.Answer{Decision: confirm.Rejected}
	unclear := confirm.Answer{Decision: confirm.Unclear}
	mod := func(c confirm.Change) confirm.Answer { return confirm.Answer{Decision: confirm.Modified, Change: c} }
	for _, tc := range []struct {
		in   string
		want confirm.Answer
	}{
		{"yes", yes},
		{"Yes", yes},
		{"y", yes},
		{"go", yes},
		{"Go ahead!", yes},
		{"sure", yes},
		{"ok", yes},
		{"OK.", yes},
		{"yeah, do it", yes},
		{"yes please", yes},
		{"sounds good", yes},
		{"let's go", yes},
		{"👍", yes},
		{"no", no},
		{"No thanks", no},
		{"no thank you", no},
		{"nope", no},
		{"cancel", no},
		{"don't", no},
		{"never mind", no},
		{"not now", no},
		{"abort", no},
		{"yes but use haiku", mod(confirm.Change{Model: "haiku"})},
		{"ok, max $1", mod(confirm.Change{MaxCostCents: 100})},
		{"only 2 minutes", mod(confirm.Change{TimeoutSeconds: 120})},
		{"sure, with sonnet and up to 30 cents", mod(confirm.Change{Model: "sonnet", MaxCostCents: 30})},
		{"go, timeout 90s", mod(confirm.Change{TimeoutSeconds: 90})},
		{"yes, use openai/gpt-5-mini", mod(confirm.Change{Model: "openai/gpt-5-mini"})},
		{"ok but no more than $0.25", mod(confirm.Change{MaxCostCents: 25})},
		{"yes, max 10 iterations", mod(confirm.Change{MaxIterations: 10})},
		{"yes, 50k tokens max", mod(confirm.Change{MaxTokens: 50000})},
		{"no, use haiku instead", mod(confirm.Change{Model: "haiku"})},
		{"yes, 1.5 hours", mod(confirm.Change{TimeoutSeconds: 5400})},
		{"ok, 2 dollars", mod(confirm.Change{MaxCostCents: 200})},
		{"", unclear},
		{"maybe", unclear},
		{"not sure", unclear},
		{"yes?", unclear},
		{"what will it cost?", unclear},
		{"yes no", unclear},
		{"cancel, use haiku", unclear},
		{"yes but check the README first", unclear},
		{"tell me more", unclear},
		{"ok, max $0", unclear},
		{"I guess", unclear},
		{"hmm", unclear},
	} {
		if diff := cmp.Diff(tc.want, confirm.Parse(tc.in)); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestChangeString(t *testing.T) {
	c := confirm.Change{Model: "haiku", MaxCostCents: 100, TimeoutSeconds: 120}
	if got, want := c.String(), "model haiku, max cost $1.00, timeout 2 min"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		in          string
		cost        float64
		asks, fails bool
	}{
		{"always", 0, true, false},
		{"", 5, true, false},
		{"never", 1e6, false, false},
		{"above:50", 50, false, false},
		{"above:50", 50.01, true, false},
		{"above:0", 0.5, true, false},
		{"above:-1", 0, false, true},
		{"sometimes", 0, false, true},
	} {
		p, err := confirm.ParsePolicy(tc.in)
		if (err != nil) != tc.fails {
			t.Fatalf("ParsePolicy(%q) error = %v, want failure %v", tc.in, err, tc.fails)
		}
		if err == nil && p.Asks(tc.cost) != tc.asks {
			t.Errorf("ParsePolicy(%q).Asks(%v) = %v, want %v", tc.in, tc.cost, !tc.asks, tc.asks)
		}
	}
}
