package anthropic

import "github.com/anthropics/anthropic-sdk-go"

// Prompt caching. A request holds at most MaxCacheBreakpoints
// cache_control breakpoints, as the API allows; Ava sets four:
//
//  1. the last tool: the tool definitions, the same on every call of a
//     role, are read from the cache even when the system prompt differs
//     (a subagent's holds its task);
//  2. the system prompt: tools and system prompt, the stable prefix of
//     every call of one agent;
//  3. the last block of the message before the last: the conversation as
//     the previous call sent it plus that call's answer, so a turn that
//     added more blocks than the API looks back over (20) still reads
//     the previous turn's prefix, and fork-mode subagents of one role,
//     whose conversations differ only in their last message, read the
//     forked history the first of them wrote;
//  4. the last block of the conversation, which the next call reads.
//
// A breakpoint goes on the last block of its message that accepts one
// (text, tool call, tool result); thinking blocks do not.

// MaxCacheBreakpoints is the most cache_control breakpoints the API
// accepts in one request.
const MaxCacheBreakpoints = 4

// markTail puts breakpoints 3 and 4 on the conversation.
func markTail(msgs []anthropic.MessageParam) {
	for i := max(len(msgs)-2, 0); i < len(msgs); i++ {
		blocks := msgs[i].Content
		for j := len(blocks) - 1; j >= 0; j-- {
			if markCache(&blocks[j]) {
				break
			}
		}
	}
}

// markCache puts a cache breakpoint on b when its type accepts one and
// reports whether it did.
func markCache(b *anthropic.ContentBlockParamUnion) bool {
	cc := anthropic.NewCacheControlEphemeralParam()
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	default:
		return false
	}
	return true
}
