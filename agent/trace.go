package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/tool"
)

// Span and attribute names of the OpenTelemetry GenAI semantic
// conventions, and Ava's own (ava.*).
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"

	attrOperation      = "gen_ai.operation.name"
	attrProvider       = "gen_ai.provider.name"
	attrAgentName      = "gen_ai.agent.name"
	attrAgentID        = "gen_ai.agent.id"
	attrConversationID = "gen_ai.conversation.id"
	attrRequestModel   = "gen_ai.request.model"
	attrRequestMaxTok  = "gen_ai.request.max_tokens"
	attrResponseModel  = "gen_ai.response.model"
	attrFinishReasons  = "gen_ai.response.finish_reasons"
	attrInputTokens    = "gen_ai.usage.input_tokens"
	attrOutputTokens   = "gen_ai.usage.output_tokens"
	attrCacheRead      = "gen_ai.usage.cache_read.input_tokens"
	attrCacheWrite     = "gen_ai.usage.cache_creation.input_tokens"
	attrInputMessages  = "gen_ai.input.messages"
	attrOutputMessages = "gen_ai.output.messages"
	attrSystem         = "gen_ai.system_instructions"
	attrToolName       = "gen_ai.tool.name"
	attrToolCallID     = "gen_ai.tool.call.id"
	attrToolType       = "gen_ai.tool.type"
	attrToolArgs       = "gen_ai.tool.call.arguments"
	attrToolResult     = "gen_ai.tool.call.result"
	attrErrorType      = "error.type"
	attrCost           = "ava.cost_cents"
	attrStatus         = "ava.status"
	attrIterations     = "ava.iterations"
	attrParentAgent    = "ava.parent_agent.id"
)

// noSpan is what an untraced run holds: it records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// startAgentSpan starts the run's invoke_agent span as a child of ctx's
// span (a spawning tool call's, or a caller's from the HTTP API).
func (a *Agent) startAgentSpan(ctx context.Context, input llm.Message) (context.Context, trace.Span) {
	t := a.cfg.Tracer
	if t == nil {
		return ctx, noSpan
	}
	name := a.cfg.AgentName
	if name == "" {
		name = a.cfg.Caller.AgentID
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(a.cfg.TraceLinks...)}
	ctx, span := t.Start(ctx, OpInvokeAgent+" "+name, opts...)
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{
		attribute.String(attrOperation, OpInvokeAgent),
		attribute.String(attrAgentName, name),
		attribute.String(attrAgentID, a.cfg.Caller.AgentID),
		attribute.String(attrRequestModel, a.cfg.Model.ID),
	}
	if p := a.cfg.Model.Provider; p != nil {
		attrs = append(attrs, attribute.String(attrProvider, p.Name()))
	}
	if s := a.cfg.Caller.SessionKey; s != "" {
		attrs = append(attrs, attribute.String(attrConversationID, s))
	}
	if a.cfg.ParentAgent != "" {
		attrs = append(attrs, attribute.String(attrParentAgent, a.cfg.ParentAgent))
	}
	if t.CaptureContent {
		attrs = append(attrs, attribute.String(attrSystem, t.Content(a.cfg.System)),
			attribute.String(attrInputMessages, t.Content(messagesJSON([]llm.Message{input}))))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endAgentSpan records how the run ended: usage, cost, status, and for
// any ending but success an error status whose description is why (the
// limit that ended it, a cancellation, an error).
func (a *Agent) endAgentSpan(span trace.Span, res Result) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String(attrStatus, string(res.Status)),
		attribute.Float64(attrCost, res.CostCents),
		attribute.Int(attrIterations, res.Iterations),
		attribute.Int(attrInputTokens, res.Usage.InputTokens),
		attribute.Int(attrOutputTokens, res.Usage.OutputTokens),
		attribute.Int(attrCacheRead, res.Usage.CacheReadTokens),
		attribute.Int(attrCacheWrite, res.Usage.CacheWriteTokens),
	)
	if t := a.cfg.Tracer; t.CaptureContent && res.Text != "" {
		span.SetAttributes(attribute.String(attrOutputMessages,
			t.Content(messagesJSON([]llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(res.Text)}}}))))
	}
	if res.Status != lifecycle.Success {
		span.SetAttributes(attribute.String(attrErrorType, string(res.Status)))
		desc := string(res.Status)
		if res.Err != nil {
			desc = res.Err.Error()
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

// startChatSpan starts a model call's chat span.
func (r *run) startChatSpan(req *llm.Request) (context.Context, trace.Span) {
	a := r.a
	t := a.cfg.Tracer
	if t == nil {
		return r.ctx, noSpan
	}
	ctx, span := t.Start(r.ctx, OpChat+" "+a.cfg.Model.ID, trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{
		attribute.String(attrOperation, OpChat),
		attribute.String(attrRequestModel, a.cfg.Model.ID),
	}
	if p := a.cfg.Model.Provider; p != nil {
		attrs = append(attrs, attribute.String(attrProvider, p.Name()))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int(attrRequestMaxTok, req.MaxTokens))
	}
	if t.CaptureContent {
		attrs = append(attrs, attribute.String(attrInputMessages, t.Content(messagesJSON(req.Messages))))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endChatSpan records a model call's response (or failure) and cost.
func (r *run) endChatSpan(span trace.Span, resp *llm.Response, cost float64, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		typ := "model_error"
		var pe *llm.APIError
		switch {
		case r.ctx.Err() != nil:
			typ = string(StatusOf(context.Cause(r.ctx)))
		case errors.As(err, &pe):
			typ = "http_" + strconv.Itoa(pe.StatusCode)
		}
		span.SetAttributes(attribute.String(attrErrorType, typ))
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return
	}
	model := resp.Model
	if model == "" {
		model = r.a.cfg.Model.ID
	}
	span.SetAttributes(
		attribute.String(attrResponseModel, model),
		attribute.Int(attrInputTokens, resp.Usage.InputTokens),
		attribute.Int(attrOutputTokens, resp.Usage.OutputTokens),
		attribute.Int(attrCacheRead, resp.Usage.CacheReadTokens),
		attribute.Int(attrCacheWrite, resp.Usage.CacheWriteTokens),
		attribute.StringSlice(attrFinishReasons, []string{string(resp.StopReason)}),
		attribute.Float64(attrCost, cost),
	)
	if t := r.a.cfg.Tracer; t.CaptureContent {
		span.SetAttributes(attribute.String(attrOutputMessages, t.Content(messagesJSON([]llm.Message{resp.Message}))))
	}
	span.End()
}

// startToolSpan starts a tool call's execute_tool span.
func (r *run) startToolSpan(call llm.Block, args json.RawMessage) (context.Context, trace.Span) {
	t := r.a.cfg.Tracer
	if t == nil {
		return r.ctx, noSpan
	}
	ctx, span := t.Start(r.ctx, OpExecuteTool+" "+call.ToolName, trace.WithSpanKind(trace.SpanKindInternal))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(
		attribute.String(attrOperation, OpExecuteTool),
		attribute.String(attrToolName, call.ToolName),
		attribute.String(attrToolCallID, call.ToolCallID),
		attribute.String(attrToolType, "function"),
	)
	if t.CaptureContent {
		span.SetAttributes(attribute.String(attrToolArgs, t.Content(string(args))))
	}
	return ctx, span
}

// endToolSpan records a tool call's outcome; a failed call has an error
// status (its output is content: recorded only when asked).
func (r *run) endToolSpan(span trace.Span, res tool.Result, errType string) {
	if !span.IsRecording() {
		return
	}
	t := r.a.cfg.Tracer
	if t.CaptureContent {
		span.SetAttributes(attribute.String(attrToolResult, t.Content(res.Output)))
	}
	if res.IsError {
		if errType == "" {
			errType = "tool_error"
		}
		span.SetAttributes(attribute.String(attrErrorType, errType))
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// messagesJSON renders messages in the conventions' form: a JSON array
// of {role, parts}.
func messagesJSON(msgs []llm.Message) string {
	type part struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Response  string          `json:"response,omitempty"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		msg := message{Role: string(m.Role), Parts: []part{}}
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockText:
				msg.Parts = append(msg.Parts, part{Type: "text", Content: b.Text})
			case llm.BlockThinking:
				msg.Parts = append(msg.Parts, part{Type: "reasoning", Content: b.Text})
			case llm.BlockToolCall:
				args := b.Input
				if !json.Valid(args) {
					args, _ = json.Marshal(string(args))
				}
				msg.Parts = append(msg.Parts, part{Type: "tool_call", ID: b.ToolCallID, Name: b.ToolName, Arguments: args})
			case llm.BlockToolResult:
				msg.Parts = append(msg.Parts, part{Type: "tool_call_response", ID: b.ToolCallID, Response: b.Content})
			}
		}
		out = append(out, msg)
	}
	data, _ := json.Marshal(out)
	return string(data)
}
