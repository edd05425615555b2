package openai

import (
	"encoding/json"

	"github.com/openai/openai-go/v3"

	"github.com/avaagent/ava/llm"
)

// reasoningFields are the non-standard delta fields servers put reasoning
// text in, in order of preference: "reasoning_content" (DeepSeek, vLLM,
// llama.cpp) and "reasoning" (OpenRouter, Ollama).
var reasoningFields = []string{"reasoning_content", "reasoning"}

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
func (a *accumulator) add(c openai.ChatCompletionChunk) {
	if a.model == "" {
		a.model = c.Model
	}
	if a.plugin != "" && !a.searched {
		// The plugin searched before the first chunk came.
		a.searched = true
		a.onDelta(llm.Delta{Type: llm.DeltaServerTool, ToolName: "web_search", Input: json.RawMessage("{}")})
	}
	if c.JSON.Usage.Valid() {
		a.usage = usage(c.Usage)
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

func (a *accumulator) delta(d openai.ChatCompletionChunkChoiceDelta) {
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
	if f, ok := d.JSON.ExtraFields["annotations"]; ok {
		a.anns = append(a.anns, annotations(f.Raw())...)
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
func (a *accumulator) toolCall(tc openai.ChatCompletionChunkChoiceDeltaToolCall) {
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
func (a *accumulator) callIndex(tc openai.ChatCompletionChunkChoiceDeltaToolCall) int64 {
	if tc.JSON.Index.Valid() {
		return tc.Index
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
		Message:    llm.Message{Role: llm.RoleAssistant, Content: blocks},
		Usage:      usage,
		StopReason: stopReason(a.finishReason, hasCalls),
		Model:      model,
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
func usage(u openai.CompletionUsage) llm.Usage {
	read := int(u.PromptTokensDetails.CachedTokens)
	write := int(u.PromptTokensDetails.CacheWriteTokens)
	return llm.Usage{
		InputTokens:      max(int(u.PromptTokens)-read-write, 0),
		OutputTokens:     int(u.CompletionTokens),
		CacheReadTokens:  read,
		CacheWriteTokens: write,
	}
}

// reasoning returns the reasoning text of a delta, read from the raw JSON
// since the SDK has no field for it.
func reasoning(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, name := range reasoningFields {
		f, ok := d.JSON.ExtraFields[name]
		if !ok {
			continue
		}
		var s string
		if raw := f.Raw(); raw != "" && raw != "null" && json.Unmarshal([]byte(raw), &s) == nil && s != "" {
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
