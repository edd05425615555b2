// Package money writes amounts of money for people, one way on every
// surface: the web panel (gateway/web/format.js follows the same rule and
// is tested against the same cases, testdata/cases.json), `ava ps`,
// `ava status`, `ava run`, `ava chat`, Telegram, the logs' human
// rendering and the MCP server's text answers.
//
// The rule (docs/concepts.md, "How money reads"):
//
//   - an amount is in cents below a dollar and in dollars from one up:
//     "0.42¢" (two decimals below 10¢), "12.3¢" (one from 10¢), "$1.23";
//     nothing is "0¢", and a priced amount too small to show is "<0.01¢";
//   - what a run or session spent is "unpriced" when its model has no
//     known price (the stream says so, or it used tokens and cost
//     nothing: a model priced at zero is not bounded by cost either, as
//     the caps read it), "0¢" when it used nothing at all, and
//     "1.20¢ + unpriced" when part of it is priced and part is not.
//
// Rounding is half away from zero on hundredths (tenths, whole cents) of
// a cent, computed the same way in both languages, so a figure never
// reads differently in the panel and on the terminal.
package money

import (
	"math"
	"strconv"
)

// Unpriced is what a spend with no known price reads as.
const Unpriced = "unpriced"

// Cents writes an amount in cents: "0¢", "<0.01¢", "0.42¢", "12.3¢",
// "$1.23". A negative or NaN amount is written as nothing ("0¢").
func Cents(c float64) string {
	if !(c > 0) {
		return "0¢"
	}
	hundredths := math.Round(c * 100)
	switch {
	case hundredths == 0:
		return "<0.01¢"
	case hundredths < 1000:
		return fixed(hundredths, 2) + "¢"
	}
	if tenths := math.Round(c * 10); tenths < 1000 {
		return fixed(tenths, 1) + "¢"
	}
	return "$" + fixed(math.Round(c), 2)
}

// fixed writes n / 10^places with that many decimals, from an integral n.
func fixed(n float64, places int) string {
	div := math.Pow10(places)
	whole, frac := math.Floor(n/div), math.Mod(n, div)
	s := strconv.FormatFloat(frac, 'f', 0, 64)
	for len(s) < places {
		s = "0" + s
	}
	return strconv.FormatFloat(whole, 'f', 0, 64) + "." + s
}

// Spend writes what a run, a session or a roll-up spent: cents and tokens
// used, and unpriced when the stream said (some of) its model has no
// known price. "0¢" when it used nothing; "unpriced" when it used tokens
// and nothing of it is priced; "1.20¢ + unpriced" when some is.
func Spend(cents float64, tokens int, unpriced bool) string {
	priced := cents > 0
	if !priced && tokens <= 0 {
		return Cents(0)
	}
	if !unpriced && (priced || tokens <= 0) {
		return Cents(cents)
	}
	if priced {
		return Cents(cents) + " + " + Unpriced
	}
	return Unpriced
}
