package agent

import "testing"

func TestEstimateTokensByCharacterClass(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"the quick brown fox", 1 + 2 + 2 + 1}, // letters: a token per 4, spaces free
		{"12345", 2},                           // digits: a token per 3
		{"1,2,3", 5},                           // each symbol a token
		{`{"a":1}`, 7},                         // 5 symbols, a letter, a digit
		{"日本", 3},                              // 6 non-ASCII bytes: a token per 2
		{"a\n\n\nb", 3},                        // a run of line breaks is one token
	} {
		if got := estimateTokens(c.in); got != c.want {
			t.Errorf("estimateTokens(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}
