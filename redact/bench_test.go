package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// benchLine is a typical 2 KB audit line: a web tool's result with
// URLs, times, numbers and ordinary prose, and no secret.
func benchLine(tb testing.TB) []byte {
	para := "Otter.ai Pro costs $16.99 per user per month billed monthly (https://otter.ai/pricing, fetched 2026-01-05 14:05:30); " +
		"Descript's Creator plan is $24 and includes 10 hours of transcription. Rev charges $0.25 per minute for AI transcripts " +
		"and $1.99 for human ones; see https://www.rev.com/pricing?ref=nav#plans. The task-force notes that risk-management " +
		"matters: a key point is the per-seat price, not the token count.\n"
	content, err := json.Marshal(map[string]any{"toolUseId": "toolu_01ABCDEF", "name": "read_webpages",
		"output": strings.Repeat(para, 4)})
	if err != nil {
		tb.Fatal(err)
	}
	line := `{"ts":"2026-01-05T14:05:30.123Z","agent":"S-7f3a2b","session":"ava:subagent:S-7f3a2b","seq":42,"type":"ToolResult",` +
		`"content":` + string(content) + `,"meta":{"inputTokens":1200,"outputTokens":80,"costCents":0.31,"modelId":"anthropic/claude-haiku-4-5"}}`
	if n := len(line); n < 1800 || n > 2300 {
		tb.Fatalf("bench line is %d bytes, want about 2 KB", n)
	}
	return []byte(line)
}

// benchRedactor has the secrets of a typical configuration.
func benchRedactor() *Redactor {
	return New(Options{Secrets: []string{"sk-ant-api03-0123456789abcdefghij", "ava-daemon-token-0123456789"},
		Environ: []string{"ANTHROPIC_API_KEY=sk-ant-api03-0123456789abcdefghij", "MY_SERVICE_PASS=opensesame99",
			"DATABASE_URL=postgres://ava:hunter2-pw@db:5432/ava", "HOME=/home/ava"}})
}

// BenchmarkRedact masks a typical 2 KB event line: clean (the common
// case, no allocation) and with a secret in it.
func BenchmarkRedact(b *testing.B) {
	r := benchRedactor()
	clean := benchLine(b)
	b.Run("clean-2KB", func(b *testing.B) {
		b.SetBytes(int64(len(clean)))
		b.ReportAllocs()
		for b.Loop() {
			if out := r.Redact(clean); len(out) != len(clean) {
				b.Fatal("a clean line was changed")
			}
		}
	})
	// audit-300B is the audit benchmark's entry (audit.BenchmarkAppend).
	entry := []byte(auditEntry)
	b.Run("audit-300B", func(b *testing.B) {
		b.SetBytes(int64(len(entry)))
		b.ReportAllocs()
		for b.Loop() {
			r.Redact(entry)
		}
	})
	dirty := []byte(strings.Replace(string(clean), "a key point", "a key ghp_16C7e42F292c6912E7710c838347Ae178B4a point", 1))
	b.Run("one-token-2KB", func(b *testing.B) {
		b.SetBytes(int64(len(dirty)))
		b.ReportAllocs()
		for b.Loop() {
			r.Redact(dirty)
		}
	})
}

// auditEntry is the line of audit.BenchmarkAppend's entry.
const auditEntry = `{"ts":"2026-01-01T00:00:00Z","user":"ben","agent":"S-7f3a2b","session":"ava:subagent:S-7f3a2b","seq":42,` +
	`"type":"ToolCall","content":{"id":"toolu_01ABCDEF","name":"web_search","args":{"query":"podcast transcription pricing 2026 otter.ai descript rev"}},` +
	`"meta":{"inputTokens":1200,"outputTokens":80,"costCents":0.31,"modelId":"anthropic/claude-haiku-4-5"}}`
