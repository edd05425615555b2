package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/anthropic"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/llm/ratelimit"
)

// BenchmarkFanOutFirstRequests is a fan-out's start as a new process
// makes it: k subagents' first requests through one registry that knows
// nothing of the key yet, to a fake Anthropic server on loopback that
// answers 200 ms after each request (with the real rate-limit headers
// of a roomy limit). It reports the spread of the requests' arrivals at
// the server (last minus first) and of their leaving (written to the
// connection, net/http/httptrace), median and worst over the
// iterations. Each iteration is a new client, so its connections are
// new, as a new process's are.
func BenchmarkFanOutFirstRequests(b *testing.B) {
	for _, k := range []int{8, 32} {
		b.Run(map[int]string{8: "k=8", 32: "k=32"}[k], func(b *testing.B) {
			fake := llmfake.NewAnthropic(b)
			var (
				mu      sync.Mutex
				arrived []time.Time
			)
			fake.Respond = func(llmfake.Request) llmfake.Turn {
				mu.Lock()
				arrived = append(arrived, time.Now())
				mu.Unlock()
				return llmfake.Turn{Text: "ok", Delay: 200 * time.Millisecond}
			}
			fake.SetRateLimit(llmfake.RateLimit{N: 4000, Window: time.Minute})
			var spreads, leaves []time.Duration
			for b.Loop() {
				mu.Lock()
				arrived = arrived[:0]
				mu.Unlock()
				var left []time.Time
				hc := ratelimit.HTTPClient()
				hc.Transport = wrote{base: hc.Transport, at: func(t time.Time) { mu.Lock(); left = append(left, t); mu.Unlock() }}
				prov, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: fake.URL, HTTPClient: hc})
				if err != nil {
					b.Fatal(err)
				}
				p := llm.WithRetry(ratelimit.NewRegistry(nil, nil).Wrap(prov, "sk-ant-test"), llm.RetryPolicy{})
				var wg sync.WaitGroup
				for range k {
					wg.Go(func() {
						if _, err := ask(context.Background(), p, nil); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				mu.Lock()
				spreads = append(spreads, spread(arrived))
				leaves = append(leaves, spread(left))
				mu.Unlock()
			}
			report(b, spreads, "arrive")
			report(b, leaves, "leave")
		})
	}
}

// wrote records when each request has been written to its connection.
type wrote struct {
	base http.RoundTripper
	at   func(time.Time)
}

func (w wrote) RoundTrip(req *http.Request) (*http.Response, error) {
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { w.at(time.Now()) }}
	return w.base.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
}

// spread is the last time less the first.
func spread(ts []time.Time) time.Duration {
	slices.SortFunc(ts, time.Time.Compare)
	return ts[len(ts)-1].Sub(ts[0])
}

// report reports the median and the worst of spreads in milliseconds.
func report(b *testing.B, spreads []time.Duration, what string) {
	slices.Sort(spreads)
	b.ReportMetric(float64(spreads[len(spreads)/2].Microseconds())/1000, what+"-median-ms")
	b.ReportMetric(float64(spreads[len(spreads)-1].Microseconds())/1000, what+"-max-ms")
}
