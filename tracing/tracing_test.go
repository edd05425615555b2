package tracing

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/avaagent/ava/internal/otlptest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestOffWithoutEndpoint(t *testing.T) {
	for _, e := range []map[string]string{
		{},
		{EnvCaptureContent: "true"},
		{EnvEndpoint: "http://127.0.0.1:4318", EnvTracesExporter: "none"},
		{EnvEndpoint: "http://127.0.0.1:4318", EnvSDKDisabled: "true"},
	} {
		p, err := Setup(context.Background(), Options{Getenv: env(e)})
		if p != nil || err != nil {
			t.Fatalf("%v: provider %v, err %v", e, p, err)
		}
		if p.Tracer() != nil || p.Shutdown(context.Background()) != nil || p.ForceFlush(context.Background()) != nil {
			t.Fatal("a nil provider is not inert")
		}
	}
	if !Enabled(env(map[string]string{EnvTracesEndpoint: "http://x:4318/v1/traces"})) {
		t.Fatal("the traces endpoint alone does not switch tracing on")
	}
}

func TestProtocols(t *testing.T) {
	for proto, ok := range map[string]bool{"": true, "http/protobuf": true, "grpc": true, "http/json": false, "udp": false} {
		t.Run(proto, func(t *testing.T) {
			t.Setenv(EnvEndpoint, "http://127.0.0.1:1")
			p, err := Setup(context.Background(), Options{Getenv: env(map[string]string{EnvEndpoint: "http://127.0.0.1:1", EnvProtocol: proto}),
				Logger: slog.New(slog.DiscardHandler)})
			if ok != (err == nil) {
				t.Fatalf("protocol %q: %v", proto, err)
			}
			if !ok && (!errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), EnvProtocol)) {
				t.Fatalf("error %v", err)
			}
			if p != nil {
				if p.Tracer() == nil {
					t.Fatal("no tracer")
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				p.Shutdown(ctx)
			}
		})
	}
}

func TestCaptureContentSwitch(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "true": true, "TRUE": true, "1": true, "yes": false} {
		if got := CaptureContent(env(map[string]string{EnvCaptureContent: v})); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

func TestContentIsRedactedAndBounded(t *testing.T) {
	tr := &Tracer{Redact: func(s string) string { return strings.ReplaceAll(s, "sk-secret", "[REDACTED]") }}
	if got := tr.Content("key sk-secret here"); got != "key [REDACTED] here" {
		t.Fatalf("redacted %q", got)
	}
	long := strings.Repeat("é", MaxContent) // two bytes each
	got := tr.Content(long)
	if len(got) > MaxContent+len("…[truncated]") || !strings.HasSuffix(got, "…[truncated]") || !strings.HasPrefix(got, "éé") {
		t.Fatalf("bounded to %d bytes: …%q", len(got), got[len(got)-20:])
	}
	if !utf8Valid(got) {
		t.Fatal("cut inside a UTF-8 sequence")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

type failing struct {
	tracetest.InMemoryExporter
	fail bool
}

func (f *failing) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if f.fail {
		return errors.New("connection refused")
	}
	return nil
}

func TestOutageLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	f := &failing{fail: true}
	w := &watchedExporter{SpanExporter: f, log: slog.New(slog.NewTextHandler(&buf, nil))}
	for range 5 {
		w.ExportSpans(context.Background(), nil)
	}
	f.fail = false
	w.ExportSpans(context.Background(), nil)
	w.ExportSpans(context.Background(), nil)
	f.fail = true
	w.ExportSpans(context.Background(), nil)
	out := buf.String()
	if n := strings.Count(out, "trace export failed"); n != 2 || strings.Count(out, "works again") != 1 {
		t.Fatalf("two outages logged as:\n%s", out)
	}
}

// TestScopeHasVersionAndSchema: the spans' instrumentation scope names
// Ava, its version and the conventions' schema URL, as a collector
// receives them over OTLP.
func TestScopeHasVersionAndSchema(t *testing.T) {
	col := otlptest.New(t)
	t.Setenv(EnvEndpoint, col.URL)
	p, err := Setup(context.Background(), Options{Getenv: env(map[string]string{EnvEndpoint: col.URL}), Version: "v1.2.3",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer().Start(context.Background(), "chat m")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := col.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans exported", len(spans))
	}
	s := spans[0]
	if s.Scope.GetName() != InstrumentationName || s.Scope.GetVersion() != "v1.2.3" || s.SchemaURL != SchemaURL ||
		s.Resource["service.version"] != "v1.2.3" {
		t.Errorf("scope %q %q, schema %q, resource %v", s.Scope.GetName(), s.Scope.GetVersion(), s.SchemaURL, s.Resource)
	}
	if !strings.HasPrefix(SchemaURL, "https://opentelemetry.io/schemas/1.") {
		t.Errorf("schema URL %q", SchemaURL)
	}
}
