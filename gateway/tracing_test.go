package gateway_test

import (
	"net/http"
	"testing"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/internal/otlptest"
	"github.com/avaagent/ava/tracing"
)

// TestChatContinuesCallersTraceOTel: a POST /api/chat carrying a W3C
// traceparent gets its turn's spans in the caller's trace, the
// orchestrator's invoke_agent span a child of the caller's span.
func TestChatContinuesCallersTraceOTel(t *testing.T) {
	col := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	e := newEnv(t, envOptions{})
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	code, body := e.do(http.MethodPost, "/api/chat", `{"message":"hi"}`, map[string]string{"traceparent": "00-" + traceID + "-" + spanID + "-01"})
	if code != http.StatusOK {
		t.Fatalf("chat: %d %s", code, body)
	}
	if e.in.Tracing == nil {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	if err := e.in.Tracing.ForceFlush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var root *otlptest.Span
	spans := col.Spans()
	for i, s := range spans {
		if s.Name == "invoke_agent orchestrator" {
			root = &spans[i]
		}
	}
	if root == nil {
		t.Fatalf("no orchestrator span among %d", len(spans))
	}
	if root.TraceID() != traceID || root.ParentID() != spanID {
		t.Fatalf("turn span in trace %s under %s, want %s under %s", root.TraceID(), root.ParentID(), traceID, spanID)
	}
	for _, s := range spans {
		if s.TraceID() != traceID {
			t.Errorf("span %s in trace %s", s.Name, s.TraceID())
		}
		// The daemon's runtime gives its tracer Ava's version, and the
		// conventions' schema.
		if s.Scope.GetName() != tracing.InstrumentationName || s.Scope.GetVersion() != ava.Version() || s.SchemaURL != tracing.SchemaURL {
			t.Errorf("span %s: scope %q %q, schema %q", s.Name, s.Scope.GetName(), s.Scope.GetVersion(), s.SchemaURL)
		}
	}
}
