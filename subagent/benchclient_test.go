package subagent_test

import (
	"net"
	"net/http"
	"time"
)

type httpClient = http.Client

// newHTTPClient keeps enough idle connections for a thousand concurrent
// streams to one loopback server.
func newHTTPClient() *http.Client {
	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000, IdleConnTimeout: 30 * time.Second}
	return &http.Client{Transport: tr}
}
