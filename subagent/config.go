package subagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/tool"
)

// Mode is how a subagent was started.
type Mode string

// Modes, as recorded in runs and lifecycle entries.
const (
	ModeSingle   Mode = "single"
	ModeParallel Mode = "parallel"
	ModeChain    Mode = "chain"
)

// ContextMode says what a subagent starts from.
type ContextMode string

// Context modes.
const (
	// ContextFresh starts from the task and the orchestrator's context
	// text only.
	ContextFresh ContextMode = "fresh"
	// ContextFork starts from the orchestrator's conversation so far.
	ContextFork ContextMode = "fork"
)

// Config is a spawn request: the JSON of seed 001 section 4 (snake_case),
// extended. Zero limits take the role's.
type Config struct {
	Role    string `json:"role"`
	Task    string `json:"task"`
	Context string `json:"context,omitempty"`
	Model   string `json:"model,omitempty"`
	// Timeout is in seconds.
	Timeout          float64     `json:"timeout,omitempty"`
	MaxCostCents     float64     `json:"max_cost_cents,omitempty"`
	MaxTokens        int         `json:"max_tokens,omitempty"`
	MaxIterations    int         `json:"max_iterations,omitempty"`
	ExtendedThinking *bool       `json:"extended_thinking,omitempty"`
	ContextMode      ContextMode `json:"context_mode,omitempty"`
	// PreviousStep is the result of the previous step of a chain. It is
	// another agent's output, so untrusted: it reaches the model in the
	// first message inside an untrusted block (taskPrompt), never in the
	// system prompt.
	PreviousStep string `json:"previous_step,omitempty"`
	// PreviousFindings are the findings the steps of a chain before this
	// one posted to its board (FormatFindings), when its role shares.
	// Untrusted like PreviousStep: they reach the model in the first
	// message inside an untrusted block of their own.
	PreviousFindings string `json:"previous_findings,omitempty"`
	// ModelBy is who named Model (llm.Namer): only the operator may name
	// a scripted model. Never read from JSON: a spawn from the API, an
	// MCP client or a model's tool call is NamedByOther (the zero value),
	// and only code that takes the name from the operator (the --model
	// flag, a run record the store holds) says otherwise.
	ModelBy llm.Namer `json:"-"`
}

// Validate checks the request's own fields (the role is checked against
// the known roles at spawn time).
func (c Config) Validate() error {
	switch {
	case strings.TrimSpace(c.Role) == "":
		return fmt.Errorf("role: empty")
	case strings.TrimSpace(c.Task) == "":
		return fmt.Errorf("task: empty")
	case c.Timeout < 0 || time.Duration(c.Timeout*float64(time.Second)) > role.MaxTimeout:
		return fmt.Errorf("timeout: %v seconds, want 0 (the role's) up to %v", c.Timeout, role.MaxTimeout.Seconds())
	case c.MaxCostCents < 0 || c.MaxCostCents > role.MaxCostCentsCap:
		return fmt.Errorf("max_cost_cents: %v, want 0 (the role's) up to %v", c.MaxCostCents, role.MaxCostCentsCap)
	case c.MaxTokens < 0 || c.MaxTokens > role.MaxTokensCap:
		return fmt.Errorf("max_tokens: %d, want 0 (the role's) up to %d", c.MaxTokens, role.MaxTokensCap)
	case c.MaxIterations < 0 || c.MaxIterations > role.MaxIterationsCap:
		return fmt.Errorf("max_iterations: %d, want 0 (the role's) up to %d", c.MaxIterations, role.MaxIterationsCap)
	}
	switch c.ContextMode {
	case "", ContextFresh, ContextFork:
	default:
		return fmt.Errorf("context_mode: %q, want fresh or fork", c.ContextMode)
	}
	return nil
}

// limits merges the request's limits over the role's.
func (c Config) limits(r role.Role) agent.Limits {
	l := r.Limits
	if c.Timeout > 0 {
		l.Timeout = time.Duration(c.Timeout * float64(time.Second))
	}
	if c.MaxCostCents > 0 {
		l.MaxCostCents = c.MaxCostCents
	}
	if c.MaxTokens > 0 {
		l.MaxTokens = c.MaxTokens
	}
	if c.MaxIterations > 0 {
		l.MaxIterations = c.MaxIterations
	}
	return l
}

// Result is what a subagent gives back (seed 001 section 4, plus
// subagent_id). OutputFormat says whether Output is the JSON object the
// subagent returned ("json") or its answer's text because it returned
// none ("text").
type Result struct {
	SubagentID      string           `json:"subagent_id"`
	Status          lifecycle.Status `json:"status"`
	Summary         string           `json:"summary"`
	Output          json.RawMessage  `json:"output"`
	OutputFormat    string           `json:"output_format"`
	Confidence      float64          `json:"confidence"`
	TokensUsed      int              `json:"tokens_used"`
	CostCents       float64          `json:"cost_cents"`
	DurationSeconds float64          `json:"duration_seconds"`
	Iterations      int              `json:"iterations"`
	Error           string           `json:"error,omitempty"`
	// Citations are the sources the provider's web search let the model
	// cite (URL, title, the cited text), first of each URL, in order.
	Citations []llm.Citation `json:"citations,omitempty"`
	// Partial is what a run that a limit or a stop ended had found: its
	// last text and what its tools returned (seed 001's result, extended).
	Partial *Partial `json:"partial,omitempty"`
	// Waits are the times the run waited for the person (ask_user), over
	// all its turns: kept with its result, so that a timeline shows them
	// after the process that ran it is gone.
	Waits []Wait `json:"waits,omitempty"`
}

// Wait is a time a run waited for the person: one ask_user question,
// from when it was asked to when it was answered or closed.
type Wait struct {
	QuestionID string    `json:"question_id"`
	AskedAt    time.Time `json:"asked_at"`
	// AnsweredAt is when it was answered or closed; zero while it waits.
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	// By is who ended the wait: person, orchestrator, timeout or
	// cancelled (question.By*); "" while it waits.
	By string `json:"by,omitempty"`
}

// Partial is the work of a run that did not finish.
type Partial struct {
	// Text is the last text the model wrote.
	Text string `json:"text,omitempty"`
	// ToolResults are the last tool results, oldest first, each cut to an
	// excerpt.
	ToolResults []PartialTool `json:"tool_results,omitempty"`
}

// PartialTool is one tool result of a Partial.
type PartialTool struct {
	Tool    string `json:"tool"`
	OK      bool   `json:"ok"`
	Excerpt string `json:"excerpt"`
}

// Bounds of a Partial: the last partialTools results, partialExcerpt
// bytes of each, partialText bytes of the text.
const (
	partialTools   = 10
	partialExcerpt = 300
	partialText    = 4000
)

// partialOf collects a Partial from the messages of an unfinished turn;
// nil when it had found nothing.
func partialOf(text string, msgs []llm.Message) *Partial {
	names := map[string]string{}
	var tools []PartialTool
	for _, m := range msgs {
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockToolCall:
				names[b.ToolCallID] = b.ToolName
			case llm.BlockToolResult:
				tools = append(tools, PartialTool{Tool: names[b.ToolCallID], OK: !b.IsError, Excerpt: cut(tool.UntrustedBody(b.Content), partialExcerpt)})
			}
		}
	}
	if len(tools) > partialTools {
		tools = tools[len(tools)-partialTools:]
	}
	p := &Partial{Text: cut(text, partialText), ToolResults: tools}
	if p.Text == "" && len(p.ToolResults) == 0 {
		return nil
	}
	return p
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// checkRequired reports the fields of required that the answer's
// structured output lacks (nil when there are none to require).
func checkRequired(text string, required []string) error {
	if len(required) == 0 {
		return nil
	}
	out, _, _, format := parseAnswer(text)
	var fields map[string]json.RawMessage
	if format != "json" || json.Unmarshal(out, &fields) != nil {
		return fmt.Errorf("the role requires structured output with %s, and the answer has no JSON object", strings.Join(required, ", "))
	}
	var missing []string
	for _, f := range required {
		if v, ok := fields[f]; !ok || string(v) == "null" {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the structured output misses %s, which the role requires", strings.Join(missing, ", "))
	}
	return nil
}

var fenced = lazyre.New("(?s)```(?:json)?\\s*(\\{.*?\\})\\s*```")

// parseAnswer extracts output, summary and confidence from a subagent's
// final answer: a fenced JSON block, else the last bare JSON object in
// the text. An object with an "output" key gives output, "summary" and
// "confidence" from its keys; any other object is the output itself.
// Without JSON the text is the output, format "text".
func parseAnswer(text string) (output json.RawMessage, summary string, confidence float64, format string) {
	obj := findJSONObject(text)
	if obj == nil {
		out, _ := json.Marshal(text)
		return out, firstLine(text, 200), 0, "text"
	}
	var fields struct {
		Output     json.RawMessage `json:"output"`
		Summary    string          `json:"summary"`
		Confidence *float64        `json:"confidence"`
	}
	_ = json.Unmarshal(obj, &fields)
	output = obj
	if len(fields.Output) > 0 {
		output = fields.Output
	}
	summary = fields.Summary
	if summary == "" {
		summary = firstLine(stripJSON(text, obj), 200)
	}
	if fields.Confidence != nil {
		confidence = min(max(*fields.Confidence, 0), 1)
	}
	return output, summary, confidence, "json"
}

// findJSONObject returns the fenced JSON object in text, else the last
// balanced {...} that parses, else nil.
func findJSONObject(text string) json.RawMessage {
	if m := fenced().FindAllStringSubmatch(text, -1); m != nil {
		for i := len(m) - 1; i >= 0; i-- {
			if json.Valid([]byte(m[i][1])) {
				return json.RawMessage(m[i][1])
			}
		}
	}
	for end := strings.LastIndex(text, "}"); end >= 0; end = strings.LastIndex(text[:end], "}") {
		depth := 0
		for start := end; start >= 0; start-- {
			switch text[start] {
			case '}':
				depth++
			case '{':
				depth--
			}
			if depth == 0 {
				if cand := text[start : end+1]; json.Valid([]byte(cand)) {
					return json.RawMessage(cand)
				}
				break
			}
		}
	}
	return nil
}

func stripJSON(text string, obj json.RawMessage) string {
	t := strings.Replace(text, string(obj), "", 1)
	t = strings.ReplaceAll(t, "```json", "")
	return strings.TrimSpace(strings.ReplaceAll(t, "```", ""))
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
