package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAllowList(t *testing.T) {
	got := AllowList(strings.Split(" Example.com, .docs.python.org. ,,pypi.org ", ","))
	if diff := cmp.Diff([]string{"example.com", "docs.python.org", "pypi.org"}, got); diff != "" {
		t.Fatal(diff)
	}
}

func TestProxyAllowed(t *testing.T) {
	p := &Proxy{Allow: []string{"example.com"}}
	for host, want := range map[string]bool{"example.com": true, "api.example.com": true, "EXAMPLE.com.": true,
		"badexample.com": false, "example.com.evil.net": false, "93.184.216.34": false} {
		if got := p.allowed(host); got != want {
			t.Errorf("allowed(%q) = %v, want %v", host, got, want)
		}
	}
	if !(&Proxy{}).allowed("anything.net") {
		t.Error("an empty allow-list refused a host")
	}
}

// serveProxy runs p on a Unix socket and returns a dialer to it.
func serveProxy(t *testing.T, p *Proxy) func() net.Conn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Serve(ln) }()
	t.Cleanup(func() { ln.Close(); p.Close(); <-done })
	return func() net.Conn {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// The guard sees every address dialled, also for a hostname, and a
// refusal is a 403 naming the reason; a request that is neither CONNECT
// nor absolute http is refused.
func TestProxyRefusals(t *testing.T) {
	var seen []netip.Addr
	guard := func(a netip.Addr) error { seen = append(seen, a); return errors.New("blocked for the test") }
	dial := serveProxy(t, &Proxy{Guard: guard})
	for _, req := range []string{
		"CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n",
		"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		c := dial()
		fmt.Fprint(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		body := make([]byte, 512)
		n, _ := resp.Body.Read(body)
		c.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body[:n]), "egress refused") {
			t.Errorf("%q: %d %s", req, resp.StatusCode, body[:n])
		}
	}
	if len(seen) == 0 || !seen[0].IsLoopback() {
		t.Errorf("the guard saw %v, want the loopback address localhost resolves to", seen)
	}
}
