package jsonstr

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// encodingJSON is s as encoding/json writes it, HTML-escaped or not.
func encodingJSON(t testing.TB, s string, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestAppendMatchesEncodingJSON: every ASCII byte, the odd runes and
// invalid UTF-8, and random strings of them, both ways.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	cases := []string{"", "plain", `"quoted" \ back`, "<b> & </b>", "\u2028\u2029", "é ü 日本 😀", "\xff\xfe bad", "a\x00b\x1fc\x7f"}
	var all strings.Builder
	for c := range 128 {
		all.WriteByte(byte(c))
	}
	cases = append(cases, all.String())
	pieces := append([]string{"x", "\u2028", "\xc3", "é", "<", "&"}, strings.Split(all.String(), "")...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var s strings.Builder
		for range r.IntN(20) {
			s.WriteString(pieces[r.IntN(len(pieces))])
		}
		cases = append(cases, s.String())
	}
	for _, s := range cases {
		for _, html := range []bool{true, false} {
			if got, want := Append(nil, s, html), encodingJSON(t, s, html); !bytes.Equal(got, want) {
				t.Fatalf("Append(%q, html %v) = %s, encoding/json %s", s, html, got, want)
			}
		}
	}
}
