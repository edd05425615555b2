package ratelimit

import (
	"context"
	"net/http"
	"time"
)

type observerKey struct{}

// observer is told about every answer's status and headers.
type observer func(status int, h http.Header)

func withObserver(ctx context.Context, f observer) context.Context {
	return context.WithValue(ctx, observerKey{}, f)
}

// Transport passes each answer's status and headers to the limiter that
// sent the request (found in the request's context), so every answer,
// refusals included, teaches it the provider's limits. Requests sent by
// anything else pass through untouched.
type Transport struct {
	// Base sends the requests; nil is http.DefaultTransport.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err == nil {
		if f, ok := req.Context().Value(observerKey{}).(observer); ok {
			f(resp.StatusCode, resp.Header)
		}
	}
	return resp, err
}

// HTTPClient is a provider's HTTP client with a Transport: the default
// transport with a bound on the wait for response headers (10 minutes)
// but none on a stream, which its context bounds.
func HTTPClient() *http.Client {
	base := http.DefaultTransport
	if t, ok := base.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		base = t
	}
	return &http.Client{Transport: &Transport{Base: base}}
}
