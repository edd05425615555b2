package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/tool"
)

// runTools runs the calls concurrently and returns their result blocks in
// call order. Each call is published as a ToolCall and a ToolResult event.
func (r *run) runTools(calls []llm.Block) []llm.Block {
	results := make([]llm.Block, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i] = r.runTool(c) })
	}
	wg.Wait()
	return results
}

// runTool runs one call; every failure becomes an error result.
func (r *run) runTool(call llm.Block) llm.Block {
	a := r.a
	args := call.Input
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	logged := args
	if !json.Valid(args) {
		logged, _ = json.Marshal(string(args))
	}
	at := a.now()
	a.update(func(s *Snapshot) { s.LastTool, s.LastToolAt, s.LastProgress = call.ToolName, at, at })
	a.emit(event.New(event.ToolCall, event.ToolCallContent{ID: call.ToolCallID, Name: call.ToolName, Args: logged}))
	a.activity("running " + call.ToolName)

	ctx, span := r.startToolSpan(call, logged)
	res, errType := r.execute(ctx, call.ToolName, args)
	r.endToolSpan(span, res, errType)
	a.touch()
	a.emit(event.New(event.ToolResult, event.ToolResultContent{
		ID: call.ToolCallID, Name: call.ToolName, Success: !res.IsError, Output: res.Output}))
	// The model reads the output as untrusted data in a labelled block
	// (tool.Untrusted); the event and the logs keep it as it was.
	return llm.ToolResult(call.ToolCallID, tool.Untrusted("tool "+call.ToolName, res.Output), res.IsError)
}

// execute validates and runs one call, recovering from a tool's panic.
// ctx is the run's context with the call's span. errType classifies a
// failure for the call's span (error.type).
func (r *run) execute(ctx context.Context, name string, args json.RawMessage) (res tool.Result, errType string) {
	t, ok := r.a.cfg.Tools.Get(name)
	if !ok {
		return tool.Errorf("unknown tool %q; the tools you can call are: %s", name, strings.Join(r.a.cfg.Tools.Names(), ", ")), "unknown_tool"
	}
	if !json.Valid(args) {
		return tool.Errorf("the arguments for %s are not valid JSON (%q); send one JSON object matching the tool's schema", name, truncate(string(args), 200)), "invalid_arguments"
	}
	defer func() {
		if p := recover(); p != nil {
			r.a.log.Error("tool panicked", "tool", name, "panic", p, "stack", string(debug.Stack()))
			res, errType = tool.Errorf("tool %s failed internally: %v", name, p), "panic"
		}
	}()
	ctx = tool.WithCaller(ctx, r.a.cfg.Caller)
	ctx = withConversation(ctx, r.msgs[:len(r.msgs)-1])
	ctx = tool.WithProgress(ctx, func(note string) {
		r.a.touch()
		r.a.activity(name + ": " + note)
	})
	res, err := t.Run(ctx, args)
	if err != nil {
		if r.ctx.Err() != nil && errorsIsContext(err) {
			return tool.Errorf("tool %s stopped: %v", name, context.Cause(r.ctx)), string(StatusOf(context.Cause(r.ctx)))
		}
		r.a.emit(event.New(event.Error, event.ErrorContent{Error: fmt.Sprintf("tool %s: %v", name, err)}))
		return tool.Errorf("tool %s failed: %v", name, err), "tool_error"
	}
	return res, ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
