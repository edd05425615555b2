// Package scripted is Ava's offline model: it replays a script file
// through the same engine as the real providers, so Ava can be tried, demoed
// and tested without a key or a network. Everything it answers is labelled
// offline by the callers (its provider name is "scripted").
//
// # Script format (YAML)
//
//	# A script is a list of conversations. Each request is matched to the
//	# first conversation whose `match` regexp finds the first user message
//	# (or the system prompt); a conversation without `match` matches all.
//	conversations:
//	  - match: "(?i)weather"
//	    turns:            # turn N answers the request that already holds
//	                      # N assistant messages, so replies are per conversation
//	      - thinking: "The user wants the weather."
//	        text: "Let me look."
//	        tool_calls:
//	          - name: web_search
//	            args: {query: "weather Paris"}   # a mapping, sent as JSON
//	          - name: broken
//	            raw_args: "{not json"            # sent verbatim
//	        usage: {input: 1200, output: 40}     # default: ~4 characters a token;
//	                                             # cache_read, cache_write too
//	        delay: 200ms                          # before the answer starts
//	      - text: "It is sunny. {{last_result}}"
//	  - turns:
//	      - text: "I only know about the weather."
//
// A top-level `turns:` list is shorthand for one conversation that matches
// everything. A turn may set `error: "message"` to fail that call (for
// tests of error handling). When a conversation runs out of turns the model
// answers that its script has ended.
//
// # Replies: answers chosen by what just arrived
//
// A conversation may have `replies:` instead of `turns:`. Each request
// plays the first reply whose `when:` holds for what the request got since
// the model last spoke (the new messages: the person's text, tool results,
// [Subagent] notes and results); a reply without `when:` always holds.
// Replies hold no position, so a conversation of replies never runs out:
// it reacts to a tool's answer, a person's decision or a subagent's result
// however many turns came before.
//
//	conversations:
//	  - replies:
//	      - when: {result: {status: awaiting_confirmation}}  # a tool result's fields
//	        text: "I proposed {{result.pending_id}}; answer yes to run it."
//	      - when: {result: {}}                          # any tool result
//	        text: "The tool answered: {{last_result}}"
//	      - when: {message: 'Subagent (?P<id>S-\w+) finished'}   # a regexp
//	        text: "{{match.id}} has finished."
//	      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: demo}}]
//
// `when:` holds when all it names holds:
//
//   - `result:` a tool result is among the new messages (the last one, if
//     several) and, for each field named, its JSON object has that field
//     and the field's value (a string as is, anything else as JSON)
//     matches the regexp given; `result: {}` asks for a tool result only.
//     Fields of nested objects are named with dots (`estimate.max_cents`).
//   - `message:` the regexp finds a match in the new messages' text (each
//     message's text and tool results, joined by newlines).
//
// # Templates
//
// In a turn's or a reply's text:
//
//   - {{input}}: the first user message;
//   - {{images}}: the images among the new messages (a person's attached
//     image), "image/png, 812 bytes (A-…)" each, joined by "; ", or
//     "none": what the offline model was shown;
//   - {{last_result}}: the last tool result the request holds, as the
//     model reads it (outside its untrusted-data label);
//   - {{result.FIELD}}: a field of that tool result's JSON object (dotted
//     for nested fields; a string as is, anything else as JSON; empty when
//     there is no such field);
//   - {{match.NAME}}: a named group of the `when: message:` regexp's match
//     (empty when there is none).
//
// Like a real provider, the model honours the request's output limit
// (llm.Request.MaxTokens): a turn whose output tokens (scripted, or
// estimated) exceed it is cut there, its text shortened to about four
// characters a token, its tool calls dropped, with stop reason
// max_tokens. Scripted input usage is reported as written, whatever the
// request holds.
package scripted

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/internal/fsread"
	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/llm"
)

//go:embed scripts/*.yaml
var builtin embed.FS

// Name is the provider name of the offline model.
const Name = "scripted"

// Script is a parsed script file.
type Script struct {
	Conversations []Conversation `yaml:"conversations"`
	Turns         []Turn         `yaml:"turns"`
}

// Conversation is a list of turns, or of replies, for the requests its
// Match selects.
type Conversation struct {
	Match string `yaml:"match"`
	// Turns are played in order: turn N answers the request that holds N
	// assistant messages.
	Turns []Turn `yaml:"turns"`
	// Replies are chosen by their When, first that holds (see the package
	// doc); a conversation has Turns or Replies, not both.
	Replies []Turn `yaml:"replies"`
	re      *regexp.Regexp
}

// When is the condition of a reply: it holds when every part it names
// holds for the messages the request got since the model last spoke.
type When struct {
	// Result, when set (even empty), asks for a tool result among the
	// new messages whose JSON fields match these regexps (by field path).
	Result map[string]string `yaml:"result"`
	// Message is a regexp that must find a match in the new messages'
	// text; its named groups are the {{match.NAME}} templates.
	Message string `yaml:"message"`
	result  map[string]*regexp.Regexp
	message *regexp.Regexp
}

// Turn is one scripted model response.
type Turn struct {
	Thinking  string        `yaml:"thinking"`
	Text      string        `yaml:"text"`
	ToolCalls []ToolCall    `yaml:"tool_calls"`
	Usage     *Usage        `yaml:"usage"`
	Delay     time.Duration `yaml:"delay"`
	Error     string        `yaml:"error"`
	// Citations are the sources the turn's text cites, as a provider's
	// web search citations (for offline demos and tests of how they are
	// shown).
	Citations []Citation `yaml:"citations"`
	// When is a reply's condition (Conversation.Replies only).
	When  *When          `yaml:"when"`
	Extra map[string]any `yaml:",inline"`
}

// Citation is a scripted citation of a turn's text.
type Citation struct {
	URL       string `yaml:"url"`
	Title     string `yaml:"title"`
	CitedText string `yaml:"cited_text"`
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	Name    string `yaml:"name"`
	Args    any    `yaml:"args"`
	RawArgs string `yaml:"raw_args"`
}

// Usage is a turn's scripted token usage.
type Usage struct {
	Input      int `yaml:"input"`
	Output     int `yaml:"output"`
	CacheRead  int `yaml:"cache_read"`
	CacheWrite int `yaml:"cache_write"`
}

// Parse reads a script; name is used in error messages.
func Parse(name string, data []byte) (*Script, error) {
	var s Script
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("script %s: %w", name, err)
	}
	if len(s.Turns) > 0 {
		s.Conversations = append(s.Conversations, Conversation{Turns: s.Turns})
		s.Turns = nil
	}
	if len(s.Conversations) == 0 {
		return nil, fmt.Errorf("script %s: no conversations and no turns", name)
	}
	for i := range s.Conversations {
		if err := s.Conversations[i].compile(); err != nil {
			return nil, fmt.Errorf("script %s: conversation %d: %w", name, i+1, err)
		}
	}
	return &s, nil
}

// compile checks a parsed conversation and compiles its regexps.
func (c *Conversation) compile() error {
	if c.Match != "" {
		re, err := regexp.Compile(c.Match)
		if err != nil {
			return fmt.Errorf("match: %w", err)
		}
		c.re = re
	}
	if len(c.Turns) > 0 && len(c.Replies) > 0 {
		return errors.New("has both turns and replies")
	}
	for j := range c.Turns {
		if c.Turns[j].When != nil {
			return fmt.Errorf("turn %d: when is for replies; turns are played in order", j+1)
		}
		if err := c.Turns[j].check(); err != nil {
			return fmt.Errorf("turn %d: %w", j+1, err)
		}
	}
	for j := range c.Replies {
		if err := c.Replies[j].check(); err != nil {
			return fmt.Errorf("reply %d: %w", j+1, err)
		}
	}
	return nil
}

// check refuses unknown fields and nameless tool calls, and compiles the
// turn's condition.
func (t *Turn) check() error {
	if len(t.Extra) > 0 {
		return fmt.Errorf("unknown field(s) %v", keys(t.Extra))
	}
	for _, tc := range t.ToolCalls {
		if tc.Name == "" {
			return errors.New("a tool call has no name")
		}
	}
	if t.When != nil {
		return t.When.compile()
	}
	return nil
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// MaxScriptSize bounds a script file read.
const MaxScriptSize = 4 << 20

// Load reads the script named by model: "demo" (or empty) is the built-in
// demo; anything else is a file path, read only if it is a regular file
// (a FIFO or a device is refused at once, never waited on) of at most
// MaxScriptSize bytes.
func Load(model string) (*Script, error) {
	if model == "" || model == "demo" {
		data, err := builtin.ReadFile("scripts/demo.yaml")
		if err != nil {
			return nil, fmt.Errorf("built-in demo script: %w", err)
		}
		return Parse("demo", data)
	}
	data, err := readScript(model)
	if err != nil {
		return nil, fmt.Errorf("read script %s: %w", model, err)
	}
	return Parse(model, data)
}

// readScript reads a script file without blocking on a FIFO, only if it
// is a regular file, and at most MaxScriptSize bytes.
func readScript(path string) ([]byte, error) {
	return fsread.File(path, MaxScriptSize, "a script file")
}

// Provider replays scripts. Its model ID is the script ("demo" or a path);
// scripts are loaded once and cached.
type Provider struct {
	// ChunkSize is how many characters each streamed text delta carries.
	ChunkSize int
	cache     map[string]*Script
	load      func(string) (*Script, error)
	mu        sync.Mutex
}

// New returns the offline provider.
func New() *Provider {
	return &Provider{ChunkSize: 16, cache: map[string]*Script{}, load: Load}
}

// NewWithScript returns a provider that answers every model ID with s.
func NewWithScript(s *Script) *Provider {
	p := New()
	p.load = func(string) (*Script, error) { return s, nil }
	return p
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return Name }

// TakesImages implements llm.ImageTaker: the offline model takes images
// (it can say what it got: {{images}}).
func (p *Provider) TakesImages(string) bool { return true }

// OperatorOnly implements llm.OperatorOnly: a scripted model's ID is a
// file Ava reads and replays as the model's choices, so only the
// operator may name one.
func (p *Provider) OperatorOnly() {}

// CheckModel implements llm.ModelChecker: it loads (and caches) the
// script, so that a run whose script cannot be read or parsed is refused
// before it starts.
func (p *Provider) CheckModel(_ context.Context, id string) error {
	_, err := p.script(id)
	return err
}

func (p *Provider) script(model string) (*Script, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.cache[model]; ok {
		return s, nil
	}
	s, err := p.load(model)
	if err != nil {
		return nil, err
	}
	p.cache[model] = s
	return s, nil
}

// ErrScripted marks an error a script asked for.
var ErrScripted = errors.New("scripted error")

// Stream implements llm.Provider by replaying the matching turn.
func (p *Provider) Stream(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	s, err := p.script(req.Model)
	if err != nil {
		return nil, err
	}
	turn, ok := pick(s, req)
	if !ok {
		turn = Turn{Text: "(The offline script has no more turns for this conversation.)"}
	}
	if err := sleep(ctx, turn.Delay); err != nil {
		return nil, err
	}
	if turn.Error != "" {
		return nil, fmt.Errorf("%w: %s", ErrScripted, turn.Error)
	}
	return p.play(ctx, req, turn, onDelta)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// pick finds the conversation and the turn for req.
func pick(s *Script, req *llm.Request) (Turn, bool) {
	first := firstUserText(req.Messages)
	for _, c := range s.Conversations {
		if c.re != nil && !c.re.MatchString(first) && !c.re.MatchString(req.System) {
			continue
		}
		if len(c.Replies) > 0 {
			return pickReply(c.Replies, newMessages(req.Messages))
		}
		n := 0
		for _, m := range req.Messages {
			if m.Role == llm.RoleAssistant {
				n++
			}
		}
		if n < len(c.Turns) {
			return c.Turns[n], true
		}
		return Turn{}, false
	}
	return Turn{Text: "(The offline script has no conversation matching this request.)"}, true
}

func firstUserText(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			if t := m.TextContent(); t != "" {
				return t
			}
		}
	}
	return ""
}

// untrustedBlock is the labelled block the agent loop puts every tool
// result in (tool.Untrusted); {{last_result}} is its content, as a model
// reads it.
var untrustedBlock = lazyre.New(`(?s)\A<untrusted source="[^"]*">\n(.*)\n</untrusted>\z`)

// lastResult is the content of the last tool result in msgs.
func lastResult(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for j := len(msgs[i].Content) - 1; j >= 0; j-- {
			if b := msgs[i].Content[j]; b.Type == llm.BlockToolResult {
				return unwrapResult(b.Content)
			}
		}
	}
	return ""
}

// unwrapResult is a tool result's content without its untrusted-data
// label.
func unwrapResult(content string) string {
	if m := untrustedBlock().FindStringSubmatch(content); m != nil {
		return m[1]
	}
	return content
}

// play streams turn as deltas and returns the whole response.
func (p *Provider) play(ctx context.Context, req *llm.Request, turn Turn, onDelta func(llm.Delta)) (*llm.Response, error) {
	emit := func(d llm.Delta) {
		if onDelta != nil {
			onDelta(d)
		}
	}
	text := expand(turn, req.Messages)
	u := usage(req, turn, text)
	stop := llm.StopEndTurn
	if len(turn.ToolCalls) > 0 {
		stop = llm.StopToolUse
	}
	if req.MaxTokens > 0 && u.OutputTokens > req.MaxTokens {
		text, turn.ToolCalls, u.OutputTokens, stop = cut(text, req.MaxTokens), nil, req.MaxTokens, llm.StopMaxTokens
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	if turn.Thinking != "" {
		emit(llm.Delta{Type: llm.DeltaThinking, Text: turn.Thinking})
		msg.Content = append(msg.Content, llm.Block{Type: llm.BlockThinking, Text: turn.Thinking, Signature: "scripted"})
	}
	if text != "" {
		for i := 0; i < len(text); {
			if err := ctx.Err(); err != nil {
				return nil, context.Cause(ctx)
			}
			end := chunkEnd(text, i, p.ChunkSize)
			emit(llm.Delta{Type: llm.DeltaText, Text: text[i:end]})
			i = end
		}
		b := llm.Text(text)
		for _, c := range turn.Citations {
			b.Citations = append(b.Citations, llm.Citation{URL: c.URL, Title: c.Title, CitedText: c.CitedText})
		}
		msg.Content = append(msg.Content, b)
	}
	for i, tc := range turn.ToolCalls {
		args, err := tc.json()
		if err != nil {
			return nil, err
		}
		emit(llm.Delta{Type: llm.DeltaToolCall, ToolName: tc.Name})
		msg.Content = append(msg.Content, llm.Block{Type: llm.BlockToolCall, ToolCallID: fmt.Sprintf("call_%d_%d", len(req.Messages), i+1), ToolName: tc.Name, Input: args})
	}
	return &llm.Response{Message: msg, Usage: u, StopReason: stop, Model: req.Model}, nil
}

// cut shortens text to what maxTokens output tokens hold at about four
// characters a token, on a character boundary.
func cut(text string, maxTokens int) string {
	n := maxTokens * 4
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

func (tc ToolCall) json() (json.RawMessage, error) {
	if tc.RawArgs != "" {
		return json.RawMessage(tc.RawArgs), nil
	}
	if tc.Args == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(tc.Args)
	if err != nil {
		return nil, fmt.Errorf("script tool call %s: args: %w", tc.Name, err)
	}
	return b, nil
}

// usage is the turn's scripted usage, or an estimate of about four
// characters a token.
func usage(req *llm.Request, turn Turn, text string) llm.Usage {
	if turn.Usage != nil {
		return llm.Usage{InputTokens: turn.Usage.Input, OutputTokens: turn.Usage.Output,
			CacheReadTokens: turn.Usage.CacheRead, CacheWriteTokens: turn.Usage.CacheWrite}
	}
	in := len(req.System)
	for _, m := range req.Messages {
		for _, b := range m.Content {
			in += len(b.Text) + len(b.Content) + len(b.Input)
		}
	}
	out := len(text) + len(turn.Thinking)
	for _, tc := range turn.ToolCalls {
		out += len(tc.Name) + len(tc.RawArgs) + 16
	}
	return llm.Usage{InputTokens: in/4 + 1, OutputTokens: out/4 + 1}
}

// chunkEnd is where the text delta that starts at i ends: about size
// bytes on, moved forward to a character's start, so that every delta is
// whole characters, as a real provider's are (a delta cut inside one
// reaches every surface as U+FFFD).
func chunkEnd(text string, i, size int) int {
	end := min(i+max(size, 1), len(text))
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	return end
}
