package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/tool"
)

// Span and attribute names of the OpenTelemetry GenAI semantic
// conventions, taken from the semconv package whose schema URL the
// tracer declares (tracing.SchemaURL), and Ava's own (ava.*).
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"

	attrOperation      = string(semconv.GenAIOperationNameKey)
	attrProvider       = string(semconv.GenAIProviderNameKey)
	attrAgentName      = string(semconv.GenAIAgentNameKey)
	attrAgentID        = string(semconv.GenAIAgentIDKey)
	attrConversationID = string(semconv.GenAIConversationIDKey)
	attrRequestModel   = string(semconv.GenAIRequestModelKey)
	attrRequestMaxTok  = string(semconv.GenAIRequestMaxTokensKey)
	attrResponseModel  = string(semconv.GenAIResponseModelKey)
	attrResponseID     = string(semconv.GenAIResponseIDKey)
	attrFinishReasons  = string(semconv.GenAIResponseFinishReasonsKey)
	attrInputTokens    = string(semconv.GenAIUsageInputTokensKey)
	attrOutputTokens   = string(semconv.GenAIUsageOutputTokensKey)
	attrCacheRead      = string(semconv.GenAIUsageCacheReadInputTokensKey)
	attrCacheWrite     = string(semconv.GenAIUsageCacheCreationInputTokensKey)
	attrInputMessages  = string(semconv.GenAIInputMessagesKey)
	attrOutputMessages = string(semconv.GenAIOutputMessagesKey)
	attrSystem         = string(semconv.GenAISystemInstructionsKey)
	attrToolName       = string(semconv.GenAIToolNameKey)
	attrToolCallID     = string(semconv.GenAIToolCallIDKey)
	attrToolType       = string(semconv.GenAIToolTypeKey)
	attrToolArgs       = string(semconv.GenAIToolCallArgumentsKey)
	attrToolResult     = string(semconv.GenAIToolCallResultKey)
	attrServerAddress  = string(semconv.ServerAddressKey)
	attrServerPort     = string(semconv.ServerPortKey)
	attrErrorType      = string(semconv.ErrorTypeKey)
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
	// What a sampler may decide by goes in at the start: the operation,
	// the agent, the provider and the model.
	start := append(a.modelAttrs(OpInvokeAgent), attribute.String(attrAgentName, name),
		attribute.String(attrAgentID, a.cfg.Caller.AgentID))
	ctx, span := t.Start(ctx, OpInvokeAgent+" "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithLinks(a.cfg.TraceLinks...), trace.WithAttributes(start...))
	if !span.IsRecording() {
		return ctx, span
	}
	var attrs []attribute.KeyValue
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

// modelAttrs are the attributes of a span of operation op that name the
// model called: the operation, the provider and the model. They are
// given at the span's start, so that a sampler sees them.
func (a *Agent) modelAttrs(op string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attribute.String(attrOperation, op), attribute.String(attrRequestModel, a.cfg.Model.ID))
	if p := a.cfg.Model.Provider; p != nil {
		attrs = append(attrs, attribute.String(attrProvider, p.Name()))
	}
	return attrs
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
		attribute.Int(attrInputTokens, res.Usage.AllInputTokens()),
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

// startChatSpan starts a model call's chat span. The operation, the
// provider and the model are given at the start (a sampler sees them);
// the server called and the conversation are the run's.
func (r *run) startChatSpan(req *llm.Request) (context.Context, trace.Span) {
	a := r.a
	t := a.cfg.Tracer
	if t == nil {
		return r.ctx, noSpan
	}
	ctx, span := t.Start(r.ctx, OpChat+" "+a.cfg.Model.ID, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(a.modelAttrs(OpChat)...))
	if !span.IsRecording() {
		return ctx, span
	}
	var attrs []attribute.KeyValue
	if host, port := llm.ServerOf(a.cfg.Model.Provider); host != "" {
		attrs = append(attrs, attribute.String(attrServerAddress, host))
		if port > 0 {
			attrs = append(attrs, attribute.Int(attrServerPort, port))
		}
	}
	if s := a.cfg.Caller.SessionKey; s != "" {
		attrs = append(attrs, attribute.String(attrConversationID, s))
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
	// The provider's own finish reason ("stop", "tool_calls",
	// "end_turn", …), as the conventions ask; Ava's normalised one when
	// it sent none.
	reason := resp.RawStopReason
	if reason == "" {
		reason = string(resp.StopReason)
	}
	// Input tokens count every kind, cached ones too (the conventions'
	// "all types of input tokens"); the cache's share has its own
	// attributes.
	span.SetAttributes(
		attribute.String(attrResponseModel, model),
		attribute.Int(attrInputTokens, resp.Usage.AllInputTokens()),
		attribute.Int(attrOutputTokens, resp.Usage.OutputTokens),
		attribute.Int(attrCacheRead, resp.Usage.CacheReadTokens),
		attribute.Int(attrCacheWrite, resp.Usage.CacheWriteTokens),
		attribute.StringSlice(attrFinishReasons, []string{reason}),
		attribute.Float64(attrCost, cost),
	)
	if resp.ID != "" {
		span.SetAttributes(attribute.String(attrResponseID, resp.ID))
	}
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
	ctx, span := t.Start(r.ctx, OpExecuteTool+" "+call.ToolName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(attrOperation, OpExecuteTool), attribute.String(attrToolName, call.ToolName)))
	if !span.IsRecording() {
		return ctx, span
	}
	span.SetAttributes(
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
