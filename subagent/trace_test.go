package subagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/orchestrator"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tracing"
)

// delegateScript: the orchestrator (asked "PLEASE_DELEGATE") spawns two
// parallel researchers; each searches once and answers.
const delegateScript = `
conversations:
  - match: "task-alpha|task-beta"
    turns:
      - tool_calls:
          - name: web_search
            args: {query: "secret-query"}
        usage: {input: 100, output: 10}
        delay: 300ms
      - text: |
          ` + "```json" + `
          {"output": {"n": 1}, "summary": "found", "confidence": 0.9}
          ` + "```" + `
        usage: {input: 120, output: 20}
  - match: "PLEASE_DELEGATE"
    turns:
      - tool_calls:
          - name: spawn_subagents
            args: {mode: parallel, tasks: [{role: researcher, task: task-alpha}, {role: researcher, task: task-beta}]}
        usage: {input: 300, output: 30}
      - text: "Both researched."
        usage: {input: 400, output: 10}
`

// tracedHarness is a harness whose runs are traced into an in-memory
// exporter.
func tracedHarness(t *testing.T, script string, capture bool, adjust ...func(*subagent.Options)) (*harness, *tracetest.InMemoryExporter, *tracing.Tracer) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr := tracing.NewProvider(tp, capture, nil).Tracer()
	h := newHarness(t, script, func(o *subagent.Options) {
		o.Tracer = tr
		for _, f := range adjust {
			f(o)
		}
	})
	return h, exp, tr
}

// orchestratorTurn runs one orchestrator turn with the manager's tools.
func orchestratorTurn(t *testing.T, h *harness, tr *tracing.Tracer, message string) {
	t.Helper()
	model, err := h.opts.Catalog.Resolve("sonnet")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry(h.m.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	o := orchestrator.New(orchestrator.Config{Model: model, Tools: reg, Hub: h.hub, Tracer: tr})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := o.Ask(ctx, parent.SessionKey, "", message)
	if err != nil || res.Status != lifecycle.Success {
		t.Fatalf("turn: %s %v", res.Status, err)
	}
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func children(spans tracetest.SpanStubs, of trace.SpanContext) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == of.SpanID() && s.Parent.TraceID() == of.TraceID() {
			out = append(out, s)
		}
	}
	return out
}

func byName(spans []tracetest.SpanStub, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func TestTraceOfDelegatingTurn(t *testing.T) {
	h, exp, tr := tracedHarness(t, delegateScript, false)
	orchestratorTurn(t, h, tr, "PLEASE_DELEGATE")
	spans := tracetest.SpanStubs(exp.GetSpans())

	roots := byName(spans, "invoke_agent orchestrator")
	if len(roots) != 1 || roots[0].Parent.IsValid() {
		t.Fatalf("want one root invoke_agent orchestrator span, got %d: %v", len(roots), names(spans))
	}
	root := roots[0]
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("span %s is in another trace", s.Name)
		}
	}
	ra := attrs(root)
	for k, want := range map[attribute.Key]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "orchestrator",
		"gen_ai.agent.id": "ava", "gen_ai.provider.name": "scripted", "gen_ai.request.model": "t", "ava.status": "success",
		"gen_ai.conversation.id": parent.SessionKey} {
		if got := ra[k].AsString(); got != want {
			t.Errorf("root %s = %q, want %q", k, got, want)
		}
	}
	if _, ok := ra["ava.cost_cents"]; !ok || ra["gen_ai.usage.input_tokens"].AsInt64() != 700 {
		t.Errorf("root attributes %v", ra)
	}
	top := children(spans, root.SpanContext)
	chats := byName(top, "chat t")
	tools := byName(top, "execute_tool spawn_subagents")
	if len(chats) != 2 || len(tools) != 1 || len(top) != 3 {
		t.Fatalf("root's children %v", names(top))
	}
	ca := attrs(chats[0])
	if ca["gen_ai.operation.name"].AsString() != "chat" || ca["gen_ai.response.model"].AsString() == "" ||
		ca["gen_ai.usage.input_tokens"].AsInt64() != 300 || ca["gen_ai.usage.output_tokens"].AsInt64() != 30 ||
		len(ca["gen_ai.response.finish_reasons"].AsStringSlice()) != 1 || chats[0].SpanKind != trace.SpanKindClient {
		t.Errorf("chat attributes %v", ca)
	}
	if _, ok := ca["gen_ai.usage.cache_read.input_tokens"]; !ok {
		t.Errorf("chat span lacks cache read tokens")
	}
	ta := attrs(tools[0])
	if ta["gen_ai.tool.name"].AsString() != "spawn_subagents" || ta["gen_ai.tool.call.id"].AsString() == "" ||
		ta["gen_ai.operation.name"].AsString() != "execute_tool" || tools[0].Status.Code == codes.Error {
		t.Errorf("tool span %v %v", ta, tools[0].Status)
	}

	subs := children(spans, tools[0].SpanContext)
	if len(subs) != 2 {
		t.Fatalf("the spawn tool's children %v", names(subs))
	}
	ids := map[string]bool{}
	for _, s := range subs {
		sa := attrs(s)
		if s.Name != "invoke_agent researcher" || sa["gen_ai.agent.name"].AsString() != "researcher" ||
			!strings.HasPrefix(sa["gen_ai.agent.id"].AsString(), "S-") || sa["ava.status"].AsString() != "success" ||
			sa["ava.parent_agent.id"].AsString() != "ava" {
			t.Errorf("subagent span %s %v", s.Name, sa)
		}
		ids[sa["gen_ai.agent.id"].AsString()] = true
		inner := children(spans, s.SpanContext)
		if len(byName(inner, "chat t")) != 2 || len(byName(inner, "execute_tool web_search")) != 1 || len(inner) != 3 {
			t.Errorf("subagent %s children %v", sa["gen_ai.agent.id"].AsString(), names(inner))
		}
	}
	if len(ids) != 2 {
		t.Errorf("subagent ids %v", ids)
	}
	// The two subagents ran in parallel: their spans overlap.
	if a, b := subs[0], subs[1]; !(a.StartTime.Before(b.EndTime) && b.StartTime.Before(a.EndTime)) {
		t.Errorf("subagent spans do not overlap: %v–%v and %v–%v", a.StartTime, a.EndTime, b.StartTime, b.EndTime)
	}
	// Contents are not recorded by default.
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.HasPrefix(string(kv.Key), "gen_ai.input") || strings.HasPrefix(string(kv.Key), "gen_ai.output") ||
				kv.Key == "gen_ai.tool.call.arguments" || kv.Key == "gen_ai.tool.call.result" || kv.Key == "gen_ai.system_instructions" ||
				strings.Contains(kv.Value.Emit(), "secret-query") || strings.Contains(kv.Value.Emit(), "PLEASE_DELEGATE") {
				t.Errorf("span %s records content: %s=%s", s.Name, kv.Key, kv.Value.Emit())
			}
		}
	}
}

func TestTraceRecordsContentWhenAsked(t *testing.T) {
	h, exp, tr := tracedHarness(t, delegateScript, true)
	orchestratorTurn(t, h, tr, "PLEASE_DELEGATE")
	var input, output, args, result bool
	for _, s := range exp.GetSpans() {
		a := attrs(tracetest.SpanStubFromReadOnlySpan(s.Snapshot()))
		input = input || strings.Contains(a["gen_ai.input.messages"].AsString(), "PLEASE_DELEGATE")
		output = output || strings.Contains(a["gen_ai.output.messages"].AsString(), "Both researched.")
		args = args || strings.Contains(a["gen_ai.tool.call.arguments"].AsString(), "secret-query")
		result = result || strings.Contains(a["gen_ai.tool.call.result"].AsString(), "ran web_search")
	}
	if !input || !output || !args || !result {
		t.Fatalf("contents recorded: input %v output %v args %v result %v", input, output, args, result)
	}
}

func TestTraceBackgroundSpawnAndFollowUp(t *testing.T) {
	script := `
conversations:
  - match: "task-bg"
    turns:
      - text: '{"output": {"n": 1}, "summary": "first", "confidence": 0.9}'
      - text: '{"output": {"n": 2}, "summary": "second", "confidence": 0.9}'
  - match: "PLEASE_DELEGATE"
    turns:
      - tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: task-bg, background: true}
      - text: "Started."
`
	h, exp, tr := tracedHarness(t, script, false)
	orchestratorTurn(t, h, tr, "PLEASE_DELEGATE")
	hds := h.m.List(true)
	if len(hds) != 1 {
		t.Fatalf("%d subagents", len(hds))
	}
	if r := wait(t, hds[0]); r.Status != lifecycle.Success {
		t.Fatalf("first run %+v", r)
	}
	if _, err := h.m.Send(context.Background(), hds[0].ID(), "once more", false); err != nil {
		t.Fatal(err)
	}
	// Done is the follow-up's once Send returned.
	if r := wait(t, hds[0]); r.Summary != "second" {
		t.Fatalf("follow-up %+v", r)
	}
	spans := tracetest.SpanStubs(exp.GetSpans())
	spawnCall := byName(spans, "execute_tool spawn_subagent")
	runs := byName(spans, "invoke_agent researcher")
	if len(spawnCall) != 1 || len(runs) != 2 {
		t.Fatalf("spans %v", names(spans))
	}
	first, follow := runs[0], runs[1]
	if first.StartTime.After(follow.StartTime) {
		first, follow = follow, first
	}
	if first.Parent.SpanID() != spawnCall[0].SpanContext.SpanID() {
		t.Errorf("background run's parent %v, want the spawn tool call %v", first.Parent.SpanID(), spawnCall[0].SpanContext.SpanID())
	}
	if len(follow.Links) != 1 || follow.Links[0].SpanContext.SpanID() != first.SpanContext.SpanID() {
		t.Errorf("follow-up links %+v, want the first run %v", follow.Links, first.SpanContext.SpanID())
	}
}

func TestTraceConfirmedProposalParentsUnderTheProposingCall(t *testing.T) {
	script := `
conversations:
  - match: "task-confirm"
    turns:
      - text: '{"output": {"n": 1}, "summary": "done", "confidence": 0.9}'
  - match: "PLEASE_DELEGATE"
    turns:
      - tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: task-confirm}
      - text: "Proposed."
`
	policy, err := confirm.ParsePolicy("always")
	if err != nil {
		t.Fatal(err)
	}
	h, exp, tr := tracedHarness(t, script, false, func(o *subagent.Options) { o.Confirm, o.ConfirmTimeout = policy, time.Hour })
	orchestratorTurn(t, h, tr, "PLEASE_DELEGATE")
	ps, err := h.m.Proposals(context.Background(), parent.SessionKey)
	if err != nil || len(ps) != 1 {
		t.Fatalf("proposals %v %v", ps, err)
	}
	d, err := h.m.Decide(context.Background(), ps[0].ID, confirm.Confirmed, confirm.Change{})
	if err != nil || len(d.SubagentIDs) != 1 {
		t.Fatalf("decide %+v %v", d, err)
	}
	hd, err := h.m.Get(d.SubagentIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	wait(t, hd)
	spans := tracetest.SpanStubs(exp.GetSpans())
	call, runs := byName(spans, "execute_tool spawn_subagent"), byName(spans, "invoke_agent researcher")
	if len(call) != 1 || len(runs) != 1 {
		t.Fatalf("spans %v", names(spans))
	}
	if runs[0].Parent.SpanID() != call[0].SpanContext.SpanID() || runs[0].Parent.TraceID() != call[0].SpanContext.TraceID() {
		t.Fatalf("confirmed run's parent %v, want the proposing call %v", runs[0].Parent, call[0].SpanContext)
	}
}

func TestTraceCancelledAndTimedOutRunsHaveErrorStatus(t *testing.T) {
	script := `
conversations:
  - turns:
      - text: "slow"
        delay: 30s
`
	h, exp, _ := tracedHarness(t, script, false)
	slow := h.spawn(t, subagent.Config{Role: "researcher", Task: "to cancel"})
	timed := h.spawn(t, subagent.Config{Role: "researcher", Task: "to time out", Timeout: 0.5})
	h.model.waitCall(t)
	h.model.waitCall(t)
	slow.Cancel()
	if r := wait(t, slow); r.Status != lifecycle.Cancelled {
		t.Fatalf("cancelled run %+v", r)
	}
	if r := wait(t, timed); r.Status != lifecycle.Timeout {
		t.Fatalf("timed-out run %+v", r)
	}
	want := map[string]struct{ status, desc string }{
		slow.ID():  {"cancelled", "cancelled"},
		timed.ID(): {"timeout", "wall-clock timeout"},
	}
	seen := 0
	for _, s := range tracetest.SpanStubs(exp.GetSpans()) {
		a := attrs(s)
		w, ok := want[a["gen_ai.agent.id"].AsString()]
		if !ok || !strings.HasPrefix(s.Name, "invoke_agent") {
			continue
		}
		seen++
		if s.Status.Code != codes.Error || !strings.Contains(s.Status.Description, w.desc) ||
			a["ava.status"].AsString() != w.status || a["error.type"].AsString() != w.status {
			t.Errorf("%s: status %v %q, attributes %v", s.Name, s.Status.Code, s.Status.Description, a)
		}
		chats := children(tracetest.SpanStubs(exp.GetSpans()), s.SpanContext)
		if len(chats) != 1 || chats[0].Status.Code != codes.Error {
			t.Errorf("the interrupted model call %v", chats)
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of 2 invoke_agent spans", seen)
	}
}

func names(spans []tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
