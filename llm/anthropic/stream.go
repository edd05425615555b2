package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/avaagent/ava/llm"
)

// accumulator assembles a streamed message from its events and forwards
// the live pieces to onDelta.
type accumulator struct {
	onDelta func(llm.Delta)

	model   string
	id      string
	blocks  []*pendingBlock
	usage   llm.Usage
	stop    anthropic.StopReason
	started bool
	stopped bool
}

// pendingBlock is a content block being streamed. A nil block in
// accumulator.blocks is one of a type Ava does not use (a container
// upload, say): its events are accepted and dropped.
type pendingBlock struct {
	llm.Block
	text     strings.Builder
	thinking strings.Builder
	sig      strings.Builder
	input    strings.Builder
	// startInput is the input the start event carried, kept when no
	// input_json_delta follows.
	startInput string
	// startRaw is a server_tool_use block's start event content, the
	// block as the API sent it but for its streamed input.
	startRaw string
}

func newAccumulator(onDelta func(llm.Delta)) *accumulator {
	if onDelta == nil {
		onDelta = func(llm.Delta) {}
	}
	return &accumulator{onDelta: onDelta}
}

// add applies one event. An error means the stream broke the protocol.
func (a *accumulator) add(ev anthropic.MessageStreamEventUnion) error {
	if !a.started && ev.Type != "message_start" {
		return fmt.Errorf("%s event before message_start", ev.Type)
	}
	switch ev.Type {
	case "message_start":
		if a.started {
			return fmt.Errorf("second message_start")
		}
		a.started = true
		a.model = string(ev.Message.Model)
		a.id = ev.Message.ID
		u := ev.Message.Usage
		a.usage = llm.Usage{
			InputTokens:      int(u.InputTokens),
			OutputTokens:     int(u.OutputTokens),
			CacheReadTokens:  int(u.CacheReadInputTokens),
			CacheWriteTokens: int(u.CacheCreationInputTokens),
			WebSearches:      int(u.ServerToolUse.WebSearchRequests),
			WebFetches:       int(u.ServerToolUse.WebFetchRequests),
		}
	case "content_block_start":
		return a.start(ev)
	case "content_block_delta":
		return a.delta(ev)
	case "content_block_stop":
		if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
			return fmt.Errorf("content_block_stop for unknown block %d", ev.Index)
		}
		return a.stopBlock(a.blocks[ev.Index])
	case "message_delta":
		a.stop = ev.Delta.StopReason
		a.addDeltaUsage(ev.Usage)
	case "message_stop":
		a.stopped = true
	}
	return nil
}

// addDeltaUsage applies message_delta's usage: its counts are cumulative
// totals, so they replace the ones from message_start; fields it omits
// keep their message_start value.
func (a *accumulator) addDeltaUsage(u anthropic.MessageDeltaUsage) {
	if u.JSON.OutputTokens.Valid() {
		a.usage.OutputTokens = int(u.OutputTokens)
	}
	if u.JSON.InputTokens.Valid() {
		a.usage.InputTokens = int(u.InputTokens)
	}
	if u.JSON.CacheReadInputTokens.Valid() {
		a.usage.CacheReadTokens = int(u.CacheReadInputTokens)
	}
	if u.JSON.CacheCreationInputTokens.Valid() {
		a.usage.CacheWriteTokens = int(u.CacheCreationInputTokens)
	}
	if u.JSON.ServerToolUse.Valid() {
		a.usage.WebSearches = int(u.ServerToolUse.WebSearchRequests)
		a.usage.WebFetches = int(u.ServerToolUse.WebFetchRequests)
	}
}

// stopBlock completes a server_tool_use block, whose input has streamed
// in, and tells onDelta the provider is running the tool.
func (a *accumulator) stopBlock(b *pendingBlock) error {
	if b == nil || b.Type != llm.BlockServerToolUse {
		return nil
	}
	b.Input = toolCallInput(b)
	raw, err := serverUseRaw(b.startRaw, b.Input)
	if err != nil {
		return err
	}
	b.Raw = raw
	a.onDelta(llm.Delta{Type: llm.DeltaServerTool, ToolName: b.ToolName, Input: b.Input})
	return nil
}

func (a *accumulator) start(ev anthropic.MessageStreamEventUnion) error {
	if ev.Index != int64(len(a.blocks)) {
		return fmt.Errorf("content_block_start for block %d, want %d", ev.Index, len(a.blocks))
	}
	cb := ev.ContentBlock
	var b *pendingBlock
	switch cb.Type {
	case "text":
		b = &pendingBlock{Block: llm.Block{Type: llm.BlockText}}
		for _, c := range cb.Citations {
			cit, err := citation(c.RawJSON())
			if err != nil {
				return err
			}
			b.Citations = append(b.Citations, cit)
		}
		b.text.WriteString(cb.Text)
		if cb.Text != "" {
			a.onDelta(llm.Delta{Type: llm.DeltaText, Text: cb.Text})
		}
	case "thinking":
		b = &pendingBlock{Block: llm.Block{Type: llm.BlockThinking}}
		b.thinking.WriteString(cb.Thinking)
		b.sig.WriteString(cb.Signature)
		if cb.Thinking != "" {
			a.onDelta(llm.Delta{Type: llm.DeltaThinking, Text: cb.Thinking})
		}
	case "redacted_thinking":
		b = &pendingBlock{Block: llm.Block{Type: llm.BlockRedactedThinking, Data: cb.Data}}
	case "tool_use":
		b = &pendingBlock{Block: llm.Block{Type: llm.BlockToolCall, ToolCallID: cb.ID, ToolName: cb.Name}}
		b.startInput = cb.JSON.Input.Raw()
		a.onDelta(llm.Delta{Type: llm.DeltaToolCall, ToolName: cb.Name})
	case "server_tool_use":
		b = &pendingBlock{Block: llm.Block{Type: llm.BlockServerToolUse, Provider: providerName, ToolCallID: cb.ID, ToolName: cb.Name}}
		b.startInput = cb.JSON.Input.Raw()
		b.startRaw = cb.RawJSON()
	default:
		if isServerResult(cb.Type) {
			raw := cb.RawJSON()
			b = &pendingBlock{Block: llm.Block{Type: llm.BlockServerToolResult, Provider: providerName, ToolCallID: cb.ToolUseID,
				ToolName: strings.TrimSuffix(cb.Type, "_tool_result"), Raw: json.RawMessage(raw), Citations: resultPages(raw)}}
		}
	}
	a.blocks = append(a.blocks, b)
	return nil
}

func (a *accumulator) delta(ev anthropic.MessageStreamEventUnion) error {
	if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
		return fmt.Errorf("content_block_delta for unknown block %d", ev.Index)
	}
	b := a.blocks[ev.Index]
	if b == nil {
		return nil
	}
	d := ev.Delta
	switch d.Type {
	case "text_delta":
		b.text.WriteString(d.Text)
		a.onDelta(llm.Delta{Type: llm.DeltaText, Text: d.Text})
	case "thinking_delta":
		b.thinking.WriteString(d.Thinking)
		a.onDelta(llm.Delta{Type: llm.DeltaThinking, Text: d.Thinking})
	case "signature_delta":
		b.sig.WriteString(d.Signature)
	case "input_json_delta":
		b.input.WriteString(d.PartialJSON)
	case "citations_delta":
		c, err := citation(d.Citation.RawJSON())
		if err != nil {
			return err
		}
		b.Citations = append(b.Citations, c)
	}
	return nil
}

// response returns the assembled turn.
func (a *accumulator) response() *llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: make([]llm.Block, 0, len(a.blocks))}
	for _, b := range a.blocks {
		if b == nil {
			continue
		}
		blk := b.Block
		switch blk.Type {
		case llm.BlockText:
			blk.Text = b.text.String()
		case llm.BlockThinking:
			blk.Text = b.thinking.String()
			blk.Signature = b.sig.String()
		case llm.BlockToolCall:
			blk.Input = toolCallInput(b)
		}
		msg.Content = append(msg.Content, blk)
	}
	return &llm.Response{Message: msg, Usage: a.usage, StopReason: stopReason(a.stop), RawStopReason: string(a.stop),
		ID: a.id, Model: a.model}
}

// toolCallInput is the call's arguments as the model sent them, valid JSON
// or not: the agent loop reports invalid arguments back to the model.
func toolCallInput(b *pendingBlock) json.RawMessage {
	in := b.input.String()
	if strings.TrimSpace(in) == "" {
		in = b.startInput
	}
	if strings.TrimSpace(in) == "" || in == "null" {
		in = "{}"
	}
	return json.RawMessage(in)
}

// stopReason maps the API's stop reason to Ava's.
func stopReason(r anthropic.StopReason) llm.StopReason {
	switch r {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		return llm.StopEndTurn
	case anthropic.StopReasonToolUse:
		return llm.StopToolUse
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case anthropic.StopReasonPauseTurn:
		return llm.StopPause
	}
	return llm.StopOther
}
