// Package otlptest is a fake OpenTelemetry collector for tests and
// benchmarks: an HTTP server on 127.0.0.1 that decodes the real OTLP
// protobuf payload (POST /v1/traces, ExportTraceServiceRequest) and keeps
// the spans it received.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span with its resource's attributes and its
// instrumentation scope.
type Span struct {
	*tracepb.Span
	Resource map[string]string
	// Scope is the instrumentation scope that made the span (its name
	// and version), SchemaURL the scope's schema URL.
	Scope     *commonpb.InstrumentationScope
	SchemaURL string
}

// TraceID is the span's trace ID in hex.
func (s Span) TraceID() string { return hex.EncodeToString(s.Span.TraceId) }

// ID is the span's ID in hex.
func (s Span) ID() string { return hex.EncodeToString(s.Span.SpanId) }

// ParentID is the parent span's ID in hex ("" for a root).
func (s Span) ParentID() string { return hex.EncodeToString(s.Span.ParentSpanId) }

// Attr returns a string form of the attribute named key ("" if absent).
func (s Span) Attr(key string) string { return attr(s.Span.Attributes, key) }

// Collector is a running fake collector.
type Collector struct {
	// URL is the endpoint (OTEL_EXPORTER_OTLP_ENDPOINT).
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	spans    []Span
	requests int
	headers  []http.Header
	// got is signalled (without blocking) on every request.
	got chan struct{}
}

// New starts a collector; tb's cleanup closes it.
func New(tb testing.TB) *Collector {
	c := &Collector{got: make(chan struct{}, 1)}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	c.URL = c.srv.URL
	tb.Cleanup(c.srv.Close)
	return c
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests++
	c.headers = append(c.headers, r.Header.Clone())
	for _, rs := range req.ResourceSpans {
		res := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.Key] = valueString(kv.Value)
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, Span{Span: s, Resource: res, Scope: ss.GetScope(), SchemaURL: ss.GetSchemaUrl()})
			}
		}
	}
	c.mu.Unlock()
	select {
	case c.got <- struct{}{}:
	default:
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Requests returns how many export requests arrived.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// Headers returns each export request's headers.
func (c *Collector) Headers() []http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.headers...)
}

// Got is signalled on each export request.
func (c *Collector) Got() <-chan struct{} { return c.got }

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return valueString(kv.Value)
		}
	}
	return ""
}

// valueString is a simple string form of an attribute value.
func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_ArrayValue:
		out := ""
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				out += ","
			}
			out += valueString(e)
		}
		return out
	}
	return ""
}

// Close stops the collector (a test of an unreachable one).
func (c *Collector) Close() { c.srv.Close() }
