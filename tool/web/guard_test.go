package web

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

func TestCheckPublic(t *testing.T) {
	cases := []struct {
		addr string
		kind string // "" means allowed
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.32.0.1", ""},
		{"2606:4700:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "private (carrier-grade NAT)"},
		{"169.254.169.254", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"ff02::1", "multicast"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"64:ff9b::a00:1", "private"}, // NAT64 of 10.0.0.1
		{"2002:7f00:1::", "loopback"}, // 6to4 of 127.0.0.1
		{"64:ff9b::808:808", ""},      // NAT64 of 8.8.8.8
	}
	for _, c := range cases {
		err := checkPublic(netip.MustParseAddr(c.addr))
		var blocked *BlockedAddressError
		switch {
		case c.kind == "" && err != nil:
			t.Errorf("checkPublic(%s) = %v, want allowed", c.addr, err)
		case c.kind != "" && !errors.As(err, &blocked):
			t.Errorf("checkPublic(%s) = %v, want a %s BlockedAddressError", c.addr, err, c.kind)
		case c.kind != "" && blocked.Kind != c.kind:
			t.Errorf("checkPublic(%s) kind = %q, want %q", c.addr, blocked.Kind, c.kind)
		}
	}
}

// countingServer counts the requests that reach it.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "secret internal page")
	})
	return srv, &hits
}

func TestPrivateAddressRefusedByDefault(t *testing.T) {
	srv, hits := countingServer(t)
	tools := New(Config{})

	res := run(t, tools.HTTPGet(), map[string]any{"url": srv.URL + "/admin"})
	wantError(t, res, "refused", "127.0.0.1 is a loopback address", "private", "AVA_WEB_ALLOW_PRIVATE")

	res = run(t, tools.ReadWebpages(), map[string]any{"urls": []string{srv.URL, "http://[::1]:1/"}})
	wantError(t, res, "127.0.0.1 is a loopback address", "::1 is a loopback address")

	if n := hits.Load(); n != 0 {
		t.Errorf("the private server got %d requests, want 0", n)
	}
	if strings.Contains(res.Output, "secret internal page") {
		t.Error("private content leaked into the output")
	}
}

// A hostname is only resolved at dial time, so this proves the dialer
// itself refuses the resolved loopback address (what stops DNS
// rebinding).
func TestHostnameResolvingToLoopbackRefusedAtDial(t *testing.T) {
	srv, hits := countingServer(t)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, New(Config{}).HTTPGet(), map[string]any{"url": "http://localhost:" + port + "/"})
	wantError(t, res, "refused", "loopback address")
	if n := hits.Load(); n != 0 {
		t.Errorf("the private server got %d requests, want 0", n)
	}
}

func TestRedirectToBlockedAddressRefused(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	var innerHits atomic.Int64
	innerSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		innerHits.Add(1)
		fmt.Fprint(w, "metadata credentials")
	}))
	innerSrv.Listener.Close()
	innerSrv.Listener = inner
	innerSrv.Start()
	t.Cleanup(innerSrv.Close)

	outer := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, innerSrv.URL+"/latest/meta-data", http.StatusFound)
	})
	// Only 127.0.0.2 stands for "private" here, so the outer server on
	// 127.0.0.1 is reachable and its redirect is what gets refused.
	guard := func(a netip.Addr) error {
		if a == netip.MustParseAddr("127.0.0.2") {
			return &BlockedAddressError{Addr: a, Kind: "private"}
		}
		return nil
	}
	tools := newTools(Config{}, guard)
	res := run(t, tools.HTTPGet(), map[string]any{"url": outer.URL})
	wantError(t, res, "refused", "127.0.0.2 is a private address")
	if n := innerHits.Load(); n != 0 {
		t.Errorf("the private server got %d requests, want 0", n)
	}

	// The same guard at dial time: a direct request through the fetch
	// client (no literal-IP pre-check) is refused by the dialer.
	req, _ := http.NewRequest(http.MethodGet, innerSrv.URL, nil)
	_, err = tools.fetchClient.Do(req)
	var blocked *BlockedAddressError
	if !errors.As(err, &blocked) {
		t.Fatalf("dial to 127.0.0.2: err = %v, want a BlockedAddressError", err)
	}
	if n := innerHits.Load(); n != 0 {
		t.Errorf("the private server got %d requests, want 0", n)
	}
}

func TestAllowPrivate(t *testing.T) {
	srv, hits := countingServer(t)
	res := run(t, New(Config{AllowPrivate: true}).HTTPGet(), map[string]any{"url": srv.URL})
	wantOK(t, res, "secret internal page")
	if hits.Load() != 1 {
		t.Errorf("hits = %d, want 1", hits.Load())
	}
}
