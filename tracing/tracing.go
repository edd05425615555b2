// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// environment and holds what instrumented code needs (Tracer).
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (or OTEL_TRACES_EXPORTER is
// "none", or OTEL_SDK_DISABLED "true", which keep it off even then). When off, Setup returns a nil
// *Provider whose Tracer is nil, and instrumented code does nothing at
// all: no span, no attribute, no allocation.
//
// When on, the SDK's own environment handling applies: the exporter reads
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION
// and the TLS variables; OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL chooses
// http/protobuf (the default) or grpc; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES set the resource (service.name defaults to
// "ava"); OTEL_TRACES_SAMPLER(_ARG) the sampler; OTEL_BSP_* the batch
// processor. Spans go through a batch processor with a bounded queue:
// exporting never blocks an agent, and when the queue is full spans are
// dropped. An unreachable collector is logged once per outage (and once
// more when it recovers); each batch is retried by the exporter and the
// next batch tries again.
//
// Prompt and completion contents are recorded only when
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is true, and then
// through the instance's redactor; API keys and request headers never.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Environment variables read here (the exporter and the SDK read the
// other OTEL_* variables themselves).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES set one.
const DefaultServiceName = "ava"

// InstrumentationName names Ava's tracer (its instrumentation scope,
// whose version is Ava's: Options.Version).
const InstrumentationName = "github.com/avaagent/ava"

// SchemaURL is the schema of the semantic conventions Ava's spans
// follow, its instrumentation scope's schema URL: those of semconv
// v1.41.0, the newest package of the Go SDK that still defines every
// GenAI attribute Ava records (package agent names them from it).
const SchemaURL = semconv.SchemaURL

// DefaultMaxQueue bounds the spans waiting for export (unless
// OTEL_BSP_MAX_QUEUE_SIZE says otherwise); beyond it spans are dropped.
const DefaultMaxQueue = 4096

// ShutdownTimeout bounds the final flush in Shutdown when its context has
// no earlier deadline.
const ShutdownTimeout = 5 * time.Second

// ErrProtocol is returned for an OTLP protocol other than http/protobuf
// or grpc.
var ErrProtocol = errors.New("unsupported OTLP protocol")

// Tracer is what instrumented code needs: the tracer, whether contents
// are recorded, and how they are masked. A nil *Tracer traces nothing.
type Tracer struct {
	trace.Tracer
	// CaptureContent records prompts, completions, tool arguments and
	// results (bounded in size) as span attributes.
	CaptureContent bool
	// Redact masks a recorded content (the instance's redactor); nil
	// records it as it is.
	Redact func(string) string
}

// MaxContent bounds each recorded content attribute, in bytes.
const MaxContent = 16 << 10

// Content returns s masked and bounded for recording.
func (t *Tracer) Content(s string) string {
	if t.Redact != nil {
		s = t.Redact(s)
	}
	if len(s) > MaxContent {
		cut := MaxContent
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…[truncated]"
	}
	return s
}

// Enabled reports whether the environment (getenv) switches tracing on.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvTracesExporter)), "none") ||
		strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false
	}
	return strings.TrimSpace(getenv(EnvEndpoint)) != "" || strings.TrimSpace(getenv(EnvTracesEndpoint)) != ""
}

// CaptureContent reports whether OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is true.
func CaptureContent(getenv func(string) string) bool {
	v, err := strconv.ParseBool(strings.TrimSpace(getenv(EnvCaptureContent)))
	return err == nil && v
}

// Provider is the process's tracer provider, owned by app.Instance.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer *Tracer
}

// Options change Setup.
type Options struct {
	// Logger receives the exporter's outage notices; nil is slog.Default().
	Logger *slog.Logger
	// Redact masks recorded contents (see Tracer.Redact).
	Redact func(string) string
	// Version is Ava's version: service.version and the version of the
	// instrumentation scope, when known.
	Version string
	// Getenv reads the switches (default os.Getenv); the SDK reads the
	// other variables from the process environment itself.
	Getenv func(string) string
}

// Setup builds the tracer provider the environment asks for. It returns
// nil and no error when tracing is off. It does not contact the
// collector: an unreachable one is only logged when a batch fails.
func Setup(ctx context.Context, opt Options) (*Provider, error) {
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if !Enabled(getenv) {
		return nil, nil
	}
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	exp, err := newExporter(ctx, getenv)
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if opt.Version != "" {
		attrs = append(attrs, attribute.String("service.version", opt.Version))
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override the default name.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	otel.SetErrorHandler(errorHandler{log: log})
	w := &watchedExporter{SpanExporter: exp, log: log}
	bsp := sdktrace.NewBatchSpanProcessor(w, sdktrace.WithMaxQueueSize(envInt(getenv, "OTEL_BSP_MAX_QUEUE_SIZE", DefaultMaxQueue)))
	// The sampler comes from OTEL_TRACES_SAMPLER(_ARG): the SDK reads
	// them when none is given here (default parentbased_always_on).
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(bsp))
	return &Provider{tp: tp, tracer: &Tracer{Tracer: newTracer(tp, opt.Version), CaptureContent: CaptureContent(getenv),
		Redact: opt.Redact}}, nil
}

// newExporter builds the OTLP exporter for the configured protocol; the
// exporter reads its endpoint, headers, timeout and TLS settings from
// the environment.
func newExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := strings.TrimSpace(getenv(EnvTracesProtocol))
	if proto == "" {
		proto = strings.TrimSpace(getenv(EnvProtocol))
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: %s=%q: %w (use http/protobuf or grpc)", EnvProtocol, proto, ErrProtocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP %s exporter: %w", proto, err)
	}
	return exp, nil
}

func envInt(getenv func(string) string, name string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(getenv(name))); err == nil && n > 0 {
		return n
	}
	return def
}

// newTracer is Ava's tracer of tp: its instrumentation scope names Ava,
// its version and the conventions' schema, which lets a backend read
// the attributes by the right version of the conventions.
func newTracer(tp *sdktrace.TracerProvider, version string) trace.Tracer {
	opts := []trace.TracerOption{trace.WithSchemaURL(SchemaURL)}
	if version != "" {
		opts = append(opts, trace.WithInstrumentationVersion(version))
	}
	return tp.Tracer(InstrumentationName, opts...)
}

// NewProvider wraps an SDK tracer provider (tests give one with an
// in-memory exporter); its instrumentation scope has no version.
func NewProvider(tp *sdktrace.TracerProvider, captureContent bool, redact func(string) string) *Provider {
	return &Provider{tp: tp, tracer: &Tracer{Tracer: newTracer(tp, ""), CaptureContent: captureContent, Redact: redact}}
}

// Tracer returns the tracer for instrumented code; nil (tracing off) for
// a nil Provider.
func (p *Provider) Tracer() *Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// ForceFlush exports every span ended so far.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if err := p.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("tracing: flush: %w", err)
	}
	return nil
}

// Shutdown flushes the spans not yet exported (within ctx, and at most
// ShutdownTimeout) and stops the exporter. A nil Provider does nothing.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// watchedExporter logs an export failure once per outage, and the
// recovery.
type watchedExporter struct {
	sdktrace.SpanExporter
	log  *slog.Logger
	mu   sync.Mutex
	down bool
}

func (w *watchedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := w.SpanExporter.ExportSpans(ctx, spans)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil && !w.down:
		w.down = true
		w.log.Warn("trace export failed; spans are dropped until the collector answers (logged once per outage)",
			"spans", len(spans), "err", err)
	case err == nil && w.down:
		w.down = false
		w.log.Info("trace export works again")
	}
	return err
}

// errorHandler receives the SDK's own error reports (the batch
// processor's export failures among them, which watchedExporter already
// logged once): debug level only, so that an outage does not flood the
// log.
type errorHandler struct{ log *slog.Logger }

func (h errorHandler) Handle(err error) { h.log.Debug("opentelemetry", "err", err) }
