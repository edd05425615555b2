package gateway

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// traceContext continues a caller's trace: the W3C traceparent and
// tracestate headers of a request become its context's (remote) span
// context, so that the turn or the spawn it starts is a child of the
// caller's span. Only installed when tracing is on.
func traceContext(next http.Handler) http.Handler {
	var prop propagation.TraceContext
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("traceparent") != "" {
			r = r.WithContext(prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		next.ServeHTTP(w, r)
	})
}
