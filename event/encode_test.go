package event

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// oracleJSON is the encoding MarshalJSON had before AppendJSON: the wire
// struct through encoding/json. AppendJSON must write the same bytes.
func oracleJSON(e Event) ([]byte, error) {
	content := e.Content
	if len(content) == 0 {
		content = json.RawMessage("{}")
	}
	return json.Marshal(wire{Seq: e.Seq, Timestamp: e.Time.UTC().Format(TimeLayout), SessionID: e.Session,
		AgentID: e.Agent, UserID: e.User, EventType: e.Type, Content: content, Metadata: e.Meta})
}

// checkSameEncoding fails unless AppendJSON, MarshalJSON and json.Marshal
// of e give the oracle's bytes, or all fail where it fails.
func checkSameEncoding(t *testing.T, e Event) {
	t.Helper()
	want, wantErr := oracleJSON(e)
	prefix := []byte("prefix:")
	got, err := e.AppendJSON(prefix)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("event %+v: error %v, want error %v", e, err, wantErr)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("event %+v: AppendJSON lost what dst held: %q", e, got)
	}
	if wantErr != nil {
		if len(got) != len(prefix) {
			t.Fatalf("event %+v: a failed AppendJSON left %q", e, got)
		}
		if _, err := json.Marshal(e); err == nil {
			t.Fatalf("event %+v: json.Marshal succeeded where the oracle failed: %v", e, wantErr)
		}
		return
	}
	if got := got[len(prefix):]; !bytes.Equal(got, want) {
		t.Fatalf("event %+v:\n got %q\nwant %q", e, got, want)
	}
	if m, err := e.MarshalJSON(); err != nil || !bytes.Equal(m, want) {
		t.Fatalf("event %+v: MarshalJSON %q, %v; want %q", e, m, err, want)
	}
	if m, err := json.Marshal(e); err != nil || !bytes.Equal(m, want) {
		t.Fatalf("event %+v: json.Marshal %q, %v; want %q", e, m, err, want)
	}
}

// hostileStrings are pieces of strings that encoding/json escapes or
// replaces, and some it leaves alone.
var hostileStrings = []string{
	"", "plain", " ", "<script>", "a&b", ">", `"`, `\`, `\"`, "\u2028", "\u2029", "\u2027", "\u202a",
	"\xe2\x80", "\xe2\x80\xa8", "\xe2", "\xff", "\xfe\xff", "\xc0\xaf", "\xed\xa0\x80", "\x00", "\x01",
	"\x08", "\x0c", "\n", "\r", "\t", "\x1f", "\x7f", "é", "—", "“quoted”", "😀", "\U0010ffff",
	"\xf4\x90\x80\x80", "ava:subagent:S-1a2b3c", "</", "{}",
}

// hostileContents are contents to encode: compact and not, with HTML-
// unsafe bytes, line separators and invalid UTF-8 in strings, and some
// that are not JSON at all.
var hostileContents = []string{
	"", "{}", "null", "true", "0", "-1.5e3", `"s"`, `[]`, `{"text":"hello world"}`,
	`{ "a" : [ 1, 2 , 3 ] }`, "\n{\"a\":1}\n", "\t[1,\r\n2]", `{"a":"<b>&amp;</b>"}`,
	`{"a":"x\"y <"}`, `{"a":"\\"}`, `{"a":"\\\" >"}`, "{\"a\":\"\u2028\u2029\"}", "{\"a\":\"\xff\xfe\"}",
	"{\"a\":\"\xe2\x80\xa8 \"} ", `{"a":"\u003c"}`, `{"a":"space inside"} `, `{"nested":{"b":[{"c":null}]}}`,
	`{"a":"—"}`, `{"a":"\ud83d\ude00"}`,
	// Not JSON: each must fail.
	"{", `{"a":}`, "x", "{} {}", `{"a":"unterminated}`, "{\"a\":\"\n\"}", `[1,]`, "\xff",
}

// TestAppendJSONMatchesEncodingJSON checks the direct encoding against
// encoding/json's over hand-picked events: every field empty and full,
// hostile strings, spaced and unsafe content, edge numbers and times.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	base := Event{Seq: 7, Time: time.Date(2026, 11, 26, 16, 30, 1, 123456789, time.UTC),
		Session: "ava:cli:x", Agent: "S-abc123", Type: ToolResult, Content: json.RawMessage(`{"ok":true}`)}
	var events []Event
	events = append(events, Event{}, base)
	for _, s := range hostileStrings {
		e := base
		e.Session, e.Agent, e.User, e.Type = s, s+"x", s, Type(s)
		e.Meta.ModelID, e.Meta.ParentAgentID = s, "p"+s
		events = append(events, e)
	}
	for _, c := range hostileContents {
		e := base
		e.Content = json.RawMessage(c)
		events = append(events, e)
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 0.1, 1.5, -2.25, 1e-6, 9.99e-7, 1e-7, 1e-320,
		1e20, 1e21, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		e := base
		e.Meta = Meta{CostCents: f}
		events = append(events, e)
	}
	for _, m := range []Meta{{InputTokens: 1}, {OutputTokens: -3}, {DurationMs: math.MaxInt64},
		{InputTokens: math.MinInt, OutputTokens: math.MaxInt, CostCents: 0.5, ModelID: "m", ParentAgentID: "p", DurationMs: -1}} {
		e := base
		e.Meta = m
		events = append(events, e)
	}
	for _, tm := range []time.Time{{}, time.Unix(0, 0), time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.FixedZone("x", -7*3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)} {
		e := base
		e.Time = tm
		events = append(events, e)
	}
	for _, seq := range []uint64{0, 1, math.MaxInt64, math.MaxUint64} {
		e := base
		e.Seq = seq
		events = append(events, e)
	}
	for _, e := range events {
		checkSameEncoding(t, e)
	}
}

// TestAppendJSONMatchesEncodingJSONRandom checks the direct encoding
// against encoding/json's over 20,000 events built from hostile pieces.
func TestAppendJSONMatchesEncodingJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 4))
	str := func() string {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(hostileStrings[r.IntN(len(hostileStrings))])
		}
		return b.String()
	}
	for range 20_000 {
		content, err := json.Marshal(map[string]any{str(): str(), "n": r.NormFloat64(), "l": []string{str()}})
		if err != nil {
			t.Fatal(err)
		}
		if r.IntN(4) == 0 {
			var spaced bytes.Buffer
			if err := json.Indent(&spaced, content, " ", "\t"); err != nil {
				t.Fatal(err)
			}
			content = spaced.Bytes()
		}
		if r.IntN(10) == 0 {
			content = []byte(hostileContents[r.IntN(len(hostileContents))])
		}
		e := Event{Seq: r.Uint64() >> r.IntN(64), Time: time.Unix(r.Int64N(1<<36), r.Int64N(1e9)),
			Session: str(), Agent: str(), User: str(), Type: Type(str()), Content: content,
			Meta: Meta{InputTokens: r.IntN(3) * r.Int(), OutputTokens: r.IntN(2) * r.IntN(1000),
				CostCents: float64(r.IntN(2)) * r.ExpFloat64() * math.Pow(10, float64(r.IntN(60)-30)),
				ModelID:   str(), ParentAgentID: str(), DurationMs: r.Int64N(3) * r.Int64()}}
		checkSameEncoding(t, e)
	}
}

// FuzzAppendJSON checks the direct encoding against encoding/json's on
// arbitrary strings, content bytes and numbers.
func FuzzAppendJSON(f *testing.F) {
	for i, s := range hostileStrings {
		f.Add(uint64(i), s, s, hostileContents[i%len(hostileContents)], float64(i)/7, int64(i)*1e15)
	}
	f.Fuzz(func(t *testing.T, seq uint64, s, agent, content string, cost float64, nanos int64) {
		checkSameEncoding(t, Event{Seq: seq, Time: time.Unix(0, nanos), Session: s, Agent: agent, User: s,
			Type: Type(agent), Content: json.RawMessage(content), Meta: Meta{CostCents: cost, ModelID: s}})
	})
}

// benchEvent is a typical stored event: a tool result with some text.
var benchEvent = Event{Seq: 42, Time: time.Date(2026, 11, 26, 16, 30, 1, 0, time.UTC),
	Session: "ava:subagent:S-1a2b3c", Agent: "S-1a2b3c", Type: ToolResult,
	Content: json.RawMessage(`{"id":"call_1","name":"read_file","output":"package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n","isError":false}`),
	Meta:    Meta{InputTokens: 1200, OutputTokens: 80, CostCents: 0.42, ModelID: "claude-x"}}

// BenchmarkEncodeEvent is the direct encoding of a typical event.
func BenchmarkEncodeEvent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := benchEvent.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeEventOracle is the encoding/json form the direct
// encoding replaced, as json.Marshal(ev) ran it (reflection, then a
// second compaction of the whole line).
func BenchmarkEncodeEventOracle(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		line, err := oracleJSON(benchEvent)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, line); err != nil {
			b.Fatal(err)
		}
	}
}
