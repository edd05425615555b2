package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// moneyCase is one line of internal/money/testdata/cases.json, the table
// the Go formatter (internal/money) is tested against.
type moneyCase struct {
	Cents    float64 `json:"cents"`
	Tokens   int     `json:"tokens"`
	Unpriced bool    `json:"unpriced"`
	Want     string  `json:"want"`
	Why      string  `json:"why"`
}

// TestFormatJSReadsMoneyAsGo: the panel's format.js writes every case of
// the shared table as internal/money does, so money reads the same in
// the panel and on every other surface (issue 42 item 7).
func TestFormatJSReadsMoneyAsGo(t *testing.T) {
	chrome := findChromium(t)
	raw, err := os.ReadFile("../internal/money/testdata/cases.json")
	must(t, err)
	var cases []moneyCase
	must(t, json.Unmarshal(raw, &cases))
	e := newEnv(t, envOptions{script: browserScript})
	b := newBrowser(t, chrome)
	b.run(chromedp.Navigate(e.ts.URL + "/"))
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`import('/format.js').then((f) => %s.map((c) => f.cost(c.cents, c.tokens, c.unpriced)))`, raw), chromedp.EvalAwaitPromise))
	must(t, err)
	if len(got) != len(cases) {
		t.Fatalf("format.js answered %d cases of %d", len(got), len(cases))
	}
	for i, c := range cases {
		if got[i] != c.Want {
			t.Errorf("format.js cost(%v, %d, %v) = %q, want %q as Go writes it (%s)", c.Cents, c.Tokens, c.Unpriced, got[i], c.Want, c.Why)
		}
	}
}
