package gateway

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/event"
)

// Metrics are the daemon's Prometheus metrics, in a registry of their
// own. Counters fed by events count from this process's start; pass
// Metrics to ava.Options.Sinks so that it sees every kept event.
type Metrics struct {
	reg         *prometheus.Registry
	spawns      *prometheus.CounterVec
	finished    *prometheus.CounterVec
	tokens      *prometheus.CounterVec
	cost        *prometheus.CounterVec
	subscribers prometheus.Gauge
	latency     *prometheus.HistogramVec
	connsClosed *prometheus.CounterVec
}

// NewMetrics returns the metrics, with the Go runtime and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.spawns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ava_subagent_spawns_total",
		Help: "Subagents started, by role."}, []string{"role"})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ava_subagent_runs_finished_total",
		Help: "Subagent runs ended, by role and final status."}, []string{"role", "status"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ava_model_tokens_total",
		Help: "Model tokens used, by model and direction (input, output)."}, []string{"model", "direction"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ava_model_cost_cents_total",
		Help: "Model cost in US cents, by model."}, []string{"model"})
	m.subscribers = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ava_stream_subscribers",
		Help: "Open Server-Sent Event streams."})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ava_http_request_duration_seconds",
		Help:    "HTTP request latency by route, method and status (streams: their whole duration).",
		Buckets: prometheus.DefBuckets}, []string{"route", "method", "code"})
	m.connsClosed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ava_http_connections_closed_total",
		Help: "Connections the daemon closed before they authenticated: idle too long (unauthenticated_idle), or pushed out by newer ones at the limit (unauthenticated_evicted)."},
		[]string{"reason"})
	m.reg.MustRegister(m.spawns, m.finished, m.tokens, m.cost, m.subscribers, m.latency, m.connsClosed,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Deliver counts a kept event (event.Sink): spawns, ends, tokens, cost.
func (m *Metrics) Deliver(ev event.Event) error {
	switch ev.Type {
	case event.SubagentSpawn:
		var c event.SubagentSpawnContent
		if ev.Decode(&c) == nil && !c.FollowUp { // a follow-up turn is no new subagent
			m.spawns.WithLabelValues(c.Role).Inc()
		}
	case event.SubagentComplete:
		var c event.SubagentCompleteContent
		if ev.Decode(&c) == nil {
			m.finished.WithLabelValues(c.Role, string(c.Status)).Inc()
		}
	case event.CostUpdate:
		model := ev.Meta.ModelID
		m.tokens.WithLabelValues(model, "input").Add(float64(ev.Meta.InputTokens))
		m.tokens.WithLabelValues(model, "output").Add(float64(ev.Meta.OutputTokens))
		m.cost.WithLabelValues(model).Add(ev.Meta.CostCents)
	}
	return nil
}

// watch adds the gauges of running and queued subagents of rt: a
// queued run holds no slot, so it is counted apart.
func (m *Metrics) watch(rt *ava.Runtime) {
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ava_subagents_running",
		Help: "Subagents running in this daemon (queued ones are not counted)."},
		func() float64 { r, _ := rt.Counts(); return float64(r) })
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ava_subagents_queued",
		Help: "Subagents waiting in this daemon's queue for a free slot."},
		func() float64 { _, q := rt.Counts(); return float64(q) })
	// A second server over the same metrics keeps the first gauges.
	_ = m.reg.Register(running)
	_ = m.reg.Register(queued)
	_ = m.reg.Register(hookCollector{rt: rt})
}

// hookCollector reports the hook deliveries: this process's attempts by
// outcome (counters), and the store's deliveries by status (gauges: the
// whole data root or cluster).
type hookCollector struct{ rt *ava.Runtime }

var (
	hookAttempts = prometheus.NewDesc("ava_hook_deliveries_total",
		"Hook delivery attempts made by this process, by outcome (delivered, failed: tried again later, dead: attempts spent).",
		[]string{"outcome"}, nil)
	hookStatus = prometheus.NewDesc("ava_hook_deliveries",
		"Hook deliveries in the store, by status (pending, failed, dead, delivered).", []string{"status"}, nil)
)

// Describe implements prometheus.Collector.
func (hookCollector) Describe(ch chan<- *prometheus.Desc) { ch <- hookAttempts; ch <- hookStatus }

// Collect implements prometheus.Collector; a store that does not answer
// within two seconds leaves the gauges out.
func (c hookCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	f, err := c.rt.HookFigures(ctx)
	for outcome, n := range map[string]int64{"delivered": f.Delivered, "failed": f.Failed, "dead": f.Dead} {
		ch <- prometheus.MustNewConstMetric(hookAttempts, prometheus.CounterValue, float64(n), outcome)
	}
	if err != nil {
		return
	}
	for _, st := range ava.HookStatuses {
		ch <- prometheus.MustNewConstMetric(hookStatus, prometheus.GaugeValue, float64(f.ByStatus[st]), st)
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the metrics' registry (to add more).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// instrument records each request's latency by route pattern.
func (m *Metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.latency.WithLabelValues(route, r.Method, strconv.Itoa(rec.code)).Observe(time.Since(start).Seconds())
	})
}

// statusRecorder remembers the status code written.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the writer's Flush.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
