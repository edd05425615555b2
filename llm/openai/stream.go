package openai

import (
	"encoding/json"
	"errors"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/avaagent/ava/llm"
)

// chatChunk is a streamed chat completion chunk: the fields the
// accumulator reads, decoded by encoding/json (the SDK's
// ChatCompletionChunk, decoded by reflection into every field the API
// has, cost about as much CPU as the rest of a call).
type chatChunk struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	// Usage is nil when the chunk has none (or null).
	Usage   *chunkUsage   `json:"usage"`
	Choices []chunkChoice `json:"choices"`
}

// UnmarshalJSON decodes a chunk with encoding/json. A chunk whose fields
// have unexpected JSON types (a number for a string, "0" or 1.0 for an
// index or a count), which the SDK's lenient decoder takes, is decoded
// by the SDK as before (sdkChunk), so that such a server's stream reads
// as it did.
func (c *chatChunk) UnmarshalJSON(data []byte) error {
	type plain chatChunk
	err := json.Unmarshal(data, (*plain)(c))
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return err
	}
	var s openai.ChatCompletionChunk
	if err := s.UnmarshalJSON(data); err != nil {
		return err
	}
	*c = sdkChunk(s)
	return nil
}

// sdkChunk is the SDK's decoding of a chunk as a chatChunk.
func sdkChunk(s openai.ChatCompletionChunk) chatChunk {
	c := chatChunk{ID: s.ID, Model: s.Model}
	if s.JSON.Usage.Valid() {
		u := chunkUsage{PromptTokens: s.Usage.PromptTokens, CompletionTokens: s.Usage.CompletionTokens}
		u.PromptTokensDetails.CachedTokens = s.Usage.PromptTokensDetails.CachedTokens
		u.PromptTokensDetails.CacheWriteTokens = s.Usage.PromptTokensDetails.CacheWriteTokens
		c.Usage = &u
	}
	for _, ch := range s.Choices {
		d := ch.Delta
		cd := chunkDelta{Content: d.Content, Refusal: d.Refusal,
			ReasoningContent: extraField(d.JSON.ExtraFields, "reasoning_content"),
			Reasoning:        extraField(d.JSON.ExtraFields, "reasoning"),
			Annotations:      extraField(d.JSON.ExtraFields, "annotations")}
		for _, tc := range d.ToolCalls {
			t := chunkToolCall{ID: tc.ID}
			if tc.JSON.Index.Valid() {
				t.Index = &tc.Index
			}
			t.Function.Name, t.Function.Arguments = tc.Function.Name, tc.Function.Arguments
			cd.ToolCalls = append(cd.ToolCalls, t)
		}
		c.Choices = append(c.Choices, chunkChoice{Index: ch.Index, Delta: cd, FinishReason: ch.FinishReason})
	}
	return c
}

// extraField is the raw JSON of a field the SDK has no name for, nil
// when absent.
func extraField(fields map[string]respjson.Field, name string) json.RawMessage {
	f, ok := fields[name]
	if !ok {
		return nil
	}
	return json.RawMessage(f.Raw())
}

// chunkUsage is a chunk's token usage.
type chunkUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// chunkChoice is one choice of a chunk.
type chunkChoice struct {
	Index        int64      `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

// chunkDelta is what a choice adds. Reasoning comes in non-standard
// fields, in order of preference: "reasoning_content" (DeepSeek, vLLM,
// llama.cpp) and "reasoning" (OpenRouter, Ollama); they and the
// annotations are kept raw and read only when present.
type chunkDelta struct {
	Content          string          `json:"content"`
	Refusal          string          `json:"refusal"`
	ToolCalls        []chunkToolCall `json:"tool_calls"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	Annotations      json.RawMessage `json:"annotations"`
}

// chunkToolCall is a fragment of a tool call.
type chunkToolCall struct {
	// Index is nil when the server sent none.
	Index    *int64 `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// accumulator assembles a streamed turn from chunks and reports deltas.
// Blocks keep the order in which they started; tool calls are assembled by
// their index, since their arguments arrive split across chunks.
type accumulator struct {
	onDelta func(llm.Delta)
	blocks  []llm.Block
	// calls maps a tool call's wire index to its position in blocks.
	calls     map[int64]int
	lastIndex int64

	finishReason string
	// finished is set once a finish_reason arrived: the turn is complete
	// even if the connection then ends without [DONE].
	finished bool
	usage    llm.Usage
	model    string
	// id is the completion's ID, from the first chunk that has one.
	id string

	// plugin is the provider's name when the request carried OpenRouter's
	// web plugin: the turn then holds its search, and the answer's
	// annotations (anns) are its citations.
	plugin   string
	searched bool
	anns     []json.RawMessage
}

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	return &accumulator{onDelta: onDelta, calls: map[int64]int{}}
}

// add folds one chunk in. Only the first choice is read: Ava asks for one.
func (a *accumulator) add(c chatChunk) {
	if a.model == "" {
		a.model = c.Model
	}
	if a.id == "" {
		a.id = c.ID
	}
	if a.plugin != "" && !a.searched {
		// The plugin searched before the first chunk came.
		a.searched = true
		a.onDelta(llm.Delta{Type: llm.DeltaServerTool, ToolName: "web_search", Input: json.RawMessage("{}")})
	}
	if c.Usage != nil {
		a.usage = usage(*c.Usage)
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		a.delta(ch.Delta)
		if ch.FinishReason != "" {
			a.finishReason = ch.FinishReason
			a.finished = true
		}
	}
}

func (a *accumulator) delta(d chunkDelta) {
	if r := reasoning(d); r != "" {
		a.appendText(llm.BlockThinking, r)
		a.onDelta(llm.Delta{Type: llm.DeltaThinking, Text: r})
	}
	// A refusal is the model's answer to show, so it is text here.
	for _, s := range []string{d.Content, d.Refusal} {
		if s != "" {
			a.appendText(llm.BlockText, s)
			a.onDelta(llm.Delta{Type: llm.DeltaText, Text: s})
		}
	}
	for _, tc := range d.ToolCalls {
		a.toolCall(tc)
	}
	if d.Annotations != nil {
		a.anns = append(a.anns, annotations(string(d.Annotations))...)
	}
}

// appendText extends the last block when it has type t, else starts one.
func (a *accumulator) appendText(t llm.BlockType, s string) {
	if n := len(a.blocks); n > 0 && a.blocks[n-1].Type == t {
		a.blocks[n-1].Text += s
		return
	}
	a.blocks = append(a.blocks, llm.Block{Type: t, Text: s})
}

// toolCall folds one tool call fragment in: the ID and name come in the
// first fragment of an index, the arguments are concatenated as sent.
func (a *accumulator) toolCall(tc chunkToolCall) {
	idx := a.callIndex(tc)
	pos, ok := a.calls[idx]
	if !ok {
		pos = len(a.blocks)
		a.blocks = append(a.blocks, llm.Block{Type: llm.BlockToolCall})
		a.calls[idx] = pos
	}
	a.lastIndex = idx
	b := &a.blocks[pos]
	if b.ToolCallID == "" {
		b.ToolCallID = tc.ID
	}
	if b.ToolName == "" && tc.Function.Name != "" {
		b.ToolName = tc.Function.Name
		a.onDelta(llm.Delta{Type: llm.DeltaToolCall, ToolName: b.ToolName})
	}
	b.Input = append(b.Input, tc.Function.Arguments...)
}

// callIndex returns the fragment's index. Some servers omit it and send
// each call whole: a fragment without an index starts a new call when it
// names a function or carries a new ID, and continues the last one else.
func (a *accumulator) callIndex(tc chunkToolCall) int64 {
	if tc.Index != nil {
		return *tc.Index
	}
	if len(a.calls) > 0 {
		last := a.blocks[a.calls[a.lastIndex]].ToolCallID
		if tc.Function.Name == "" && (tc.ID == "" || tc.ID == last) {
			return a.lastIndex
		}
	}
	idx := int64(len(a.calls))
	for {
		if _, taken := a.calls[idx]; !taken {
			return idx
		}
		idx++
	}
}

// response returns the assembled turn.
func (a *accumulator) response(model string) *llm.Response {
	blocks := make([]llm.Block, 0, len(a.blocks))
	hasCalls := false
	for _, b := range a.blocks {
		if b.Type == llm.BlockToolCall {
			hasCalls = true
			if b.ToolCallID == "" {
				b.ToolCallID = newCallID()
			}
			if len(b.Input) == 0 {
				b.Input = json.RawMessage("{}")
			}
		}
		blocks = append(blocks, b)
	}
	if a.model != "" {
		model = a.model
	}
	usage := a.usage
	if a.plugin != "" {
		blocks = a.withPluginSearch(blocks)
		usage.WebSearches++
	}
	return &llm.Response{
		Message:       llm.Message{Role: llm.RoleAssistant, Content: blocks},
		Usage:         usage,
		StopReason:    stopReason(a.finishReason, hasCalls),
		RawStopReason: a.finishReason,
		ID:            a.id,
		Model:         model,
	}
}

// stopReason maps a finish_reason. Some servers (Ollama among them) say
// "stop" after tool calls; a turn with calls is a tool_use stop.
func stopReason(finish string, hasCalls bool) llm.StopReason {
	switch finish {
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "stop", "":
		if hasCalls {
			return llm.StopToolUse
		}
		return llm.StopEndTurn
	}
	return llm.StopOther
}

// usage maps wire usage. prompt_tokens includes cached reads and writes;
// they are moved to their own counters so that none is counted twice.
func usage(u chunkUsage) llm.Usage {
	read := int(u.PromptTokensDetails.CachedTokens)
	write := int(u.PromptTokensDetails.CacheWriteTokens)
	return llm.Usage{
		InputTokens:      max(int(u.PromptTokens)-read-write, 0),
		OutputTokens:     int(u.CompletionTokens),
		CacheReadTokens:  read,
		CacheWriteTokens: write,
	}
}

// reasoning returns the reasoning text of a delta: the first of its
// reasoning fields that is a non-empty string.
func reasoning(d chunkDelta) string {
	for _, raw := range [...]json.RawMessage{d.ReasoningContent, d.Reasoning} {
		var s string
		if len(raw) > 0 && string(raw) != "null" && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// withPluginSearch puts the web plugin's search first in the turn and
// its annotations on the answer's (last) text block as citations.
func (a *accumulator) withPluginSearch(blocks []llm.Block) []llm.Block {
	var cites []llm.Citation
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].Type == llm.BlockText {
			cites = chatCitations(blocks[i].Text, a.anns)
			blocks[i].Citations = cites
			break
		}
	}
	return append(pluginBlocks(a.plugin, cites), blocks...)
}
