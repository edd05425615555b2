package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/openai"
	"github.com/avaagent/ava/llm/scripted"
	"github.com/avaagent/ava/tool"
)

// scenario is one measured run: a cost cap, the tool results the model
// asks for one after another, and how long a final answer it wants.
type scenario struct {
	capCents float64
	fetches  []fetchArgs
	wantOut  int
}

type fetchArgs struct {
	Kind string `json:"kind"`
	N    int    `json:"n"`
}

// content makes n bytes of a kind of tool output: English-like prose,
// JSON records, or "digits" (single digits and commas, about one token a
// byte: denser than the loop's estimate assumes).
func content(kind string, n int) string {
	var unit string
	switch kind {
	case "prose":
		unit = "the quick brown fox jumps over the lazy dog while it reads "
	case "json":
		unit = `{"id":12345,"name":"widget","tags":["a","bc"],"price":9.99},`
	default:
		unit = "1,2,3,4,5,6,7,8,9,0,"
	}
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

func fetchTool() tool.Tool {
	return tool.NewFunc("fetch", "Fetch a document.", func(ctx context.Context, a fetchArgs) (tool.Result, error) {
		return tool.Result{Output: content(a.Kind, a.N)}, nil
	})
}

// tokens is the fake provider's tokenizer: a run of letters is a token
// per 8, a run of digits a token per 3, a run of other symbols a token per
// 2, spaces are free. Prose comes out at ~5-6 bytes a token, JSON at ~2.5,
// digits-and-commas at ~1.
func tokens(s string) int {
	n, i := 0, 0
	class := func(r byte) int {
		switch {
		case r == ' ' || r == '\n':
			return 0
		case unicode.IsLetter(rune(r)):
			return 1
		case r >= '0' && r <= '9':
			return 2
		}
		return 3
	}
	per := [4]int{0, 8, 3, 2}
	for i < len(s) {
		c, j := class(s[i]), i
		for j < len(s) && class(s[j]) == c {
			j++
		}
		if c != 0 {
			n += (j - i + per[c] - 1) / per[c]
		}
		i = j
	}
	return n
}

func scenarios(seed uint64, n int, kinds []string) []scenario {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]scenario, n)
	for i := range out {
		s := scenario{capCents: 0.05 + rng.Float64()*15, wantOut: 500 + rng.IntN(9000)}
		for range rng.IntN(8) {
			s.fetches = append(s.fetches, fetchArgs{Kind: kinds[rng.IntN(len(kinds))], N: 100 + rng.IntN(40_000)})
		}
		out[i] = s
	}
	return out
}

// overshoot sums up measured runs.
type overshoot struct {
	runs, over, success, capped int
	worst, worstPct             float64
}

func (o *overshoot) add(res agent.Result, capCents float64) {
	o.runs++
	switch res.Status {
	case lifecycle.Success:
		o.success++
	case lifecycle.CostExceeded:
		o.capped++
	}
	if d := res.CostCents - capCents; d > 0 {
		o.over++
		o.worst = max(o.worst, d)
		o.worstPct = max(o.worstPct, 100*d/capCents)
	}
}

func (o overshoot) String() string {
	return fmt.Sprintf("%d runs (%d success, %d cost_exceeded): %d ended above the cap, worst by %.5f¢ (%.3f%% of its cap)",
		o.runs, o.success, o.capped, o.over, o.worst, o.worstPct)
}

// scriptFor is the offline script of a scenario.
func scriptFor(sc scenario) string {
	var b strings.Builder
	b.WriteString("turns:\n")
	for _, f := range sc.fetches {
		fmt.Fprintf(&b, "  - tool_calls: [{name: fetch, args: {kind: %s, n: %d}}]\n", f.Kind, f.N)
	}
	fmt.Fprintf(&b, "  - text: %q\n", strings.Repeat("answer ", sc.wantOut*4/7+1))
	return b.String()
}

// TestCapOvershootScripted measures how far over its cost cap a run ends
// on the offline model (which counts ~4 bytes a token). Figures: go test
// -run CapOvershoot -v ./agent/ (docs/caps.md).
func TestCapOvershootScripted(t *testing.T) {
	var o overshoot
	sonnet := llm.Price{Input: 300, Output: 1500, CacheRead: 30, CacheWrite: 375}
	for _, sc := range scenarios(1, 120, []string{"prose", "json", "digits"}) {
		s, err := scripted.Parse("t", []byte(scriptFor(sc)))
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, agent.Config{Model: llm.Model{Provider: scripted.NewWithScript(s), ID: "m", Price: sonnet, Priced: true},
			Tools: registry(t, fetchTool()), Limits: agent.Limits{MaxCostCents: sc.capCents}}, context.Background())
		o.add(res, sc.capCents)
	}
	t.Logf("scripted model, sonnet prices: %s", o)
	if o.over > 0 {
		t.Fatalf("runs ended above their caps: %s", o)
	}
}

// TestCapOvershootOpenAIFake measures it against the fake OpenAI server
// through the real provider, the server counting every string in the
// request (bodyTokens) plus 4 tokens a message with a tokenizer whose
// density depends on the content, and honouring max_tokens. Digits and
// commas, the densest common text, are measured apart.
func TestCapOvershootOpenAIFake(t *testing.T) {
	gpt41 := llm.Price{Input: 200, Output: 800, CacheRead: 50}
	for _, c := range []struct {
		name   string
		kinds  []string
		bound  float64 // the figure's ceiling, in cents
		strict bool
	}{
		{"prose and JSON", []string{"prose", "json"}, 0, true},
		{"with digits-and-commas", []string{"prose", "json", "digits"}, 0.01, false},
	} {
		var o overshoot
		for _, sc := range scenarios(2, 60, c.kinds) {
			fake := llmfake.NewOpenAI(t)
			fake.Respond = func(r llmfake.Request) llmfake.Turn { return fakeTurn(sc, r) }
			p, err := openai.New(openai.Config{APIKey: "k", BaseURL: fake.URL + "/v1", HTTPClient: fake.Client()})
			if err != nil {
				t.Fatal(err)
			}
			res := run(t, agent.Config{Model: llm.Model{Provider: p, ID: "gpt-4.1", Price: gpt41, Priced: true},
				Tools: registry(t, fetchTool()), Limits: agent.Limits{MaxCostCents: sc.capCents}}, context.Background())
			if res.Status == lifecycle.Error {
				t.Fatal(res.Err)
			}
			o.add(res, sc.capCents)
		}
		t.Logf("fake OpenAI, gpt-4.1 prices, %s: %s", c.name, o)
		if c.strict && o.over > 0 || o.worst > c.bound && !c.strict {
			t.Fatalf("%s: %s", c.name, o)
		}
	}
}

// bodyTokens counts every string value of a decoded request body (the
// messages' text, tool arguments and results, tool schemas, and the
// values of wire fields such as roles): what the provider reads, without
// the JSON escaping of the wire.
func bodyTokens(v any) int {
	switch v := v.(type) {
	case string:
		return tokens(v)
	case float64:
		return tokens(fmt.Sprint(v))
	case []any:
		n := 0
		for _, e := range v {
			n += bodyTokens(e)
		}
		return n
	case map[string]any:
		n := 0
		for _, e := range v {
			n += bodyTokens(e)
		}
		return n
	}
	return 0
}

// fakeTurn answers a request of sc: the next fetch, or the final answer
// cut at max_tokens.
func fakeTurn(sc scenario, r llmfake.Request) llmfake.Turn {
	msgs, _ := r.Body["messages"].([]any)
	turn := 0
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			turn++
		}
	}
	in := bodyTokens(r.Body) + 4*len(msgs)
	if turn < len(sc.fetches) {
		args, _ := json.Marshal(sc.fetches[turn])
		return llmfake.Turn{ToolCalls: []llmfake.ToolCall{{ID: fmt.Sprintf("c%d", turn), Name: "fetch", Args: string(args)}},
			Usage: llm.Usage{InputTokens: in, OutputTokens: 20}}
	}
	out, stop := sc.wantOut, ""
	if mt, ok := r.Body["max_tokens"].(float64); ok && int(mt) < out {
		out, stop = int(mt), "length"
	}
	return llmfake.Turn{Text: strings.Repeat("w", out), StopReason: stop, Usage: llm.Usage{InputTokens: in, OutputTokens: out}}
}
