package money_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/avaagent/ava/internal/money"
)

// Case is one line of testdata/cases.json, the table the panel's
// format.js is tested against too (gateway's TestFormatJSReadsMoneyAsGo).
type Case struct {
	Cents    float64 `json:"cents"`
	Tokens   int     `json:"tokens"`
	Unpriced bool    `json:"unpriced"`
	Want     string  `json:"want"`
	Why      string  `json:"why"`
}

// TestSpendCases: every shared case reads as the table says.
func TestSpendCases(t *testing.T) {
	raw, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d cases: the table did not load", len(cases))
	}
	for _, c := range cases {
		if got := money.Spend(c.Cents, c.Tokens, c.Unpriced); got != c.Want {
			t.Errorf("Spend(%v, %d, %v) = %q, want %q (%s)", c.Cents, c.Tokens, c.Unpriced, got, c.Want, c.Why)
		}
	}
}

// TestCents: an amount with no spend attached (a cap, an estimate).
func TestCents(t *testing.T) {
	for in, want := range map[float64]string{0: "0¢", 50: "50.0¢", 100: "$1.00", 0.5: "0.50¢", 250: "$2.50"} {
		if got := money.Cents(in); got != want {
			t.Errorf("Cents(%v) = %q, want %q", in, got, want)
		}
	}
}
