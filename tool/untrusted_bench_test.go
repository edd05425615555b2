package tool_test

import (
	"strings"
	"testing"

	"github.com/avaagent/ava/tool"
)

// BenchmarkEscapeUntrusted measures the escaping of a 100 KB tool
// result: ASCII prose with tags, and CJK text (no ASCII fast path).
func BenchmarkEscapeUntrusted(b *testing.B) {
	for name, unit := range map[string]string{
		"ascii": "<p>Otters hold hands while they sleep, a < b, and <b>untrusted</b> words.</p>\n",
		"cjk":   "水獺は眠るときに手をつなぎます。〈注〉「信頼できない」データ。\n",
	} {
		text := strings.Repeat(unit, 100_000/len(unit))
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tool.EscapeUntrusted(text)
			}
		})
	}
}
