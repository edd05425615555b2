package web

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
)

// BlockedAddressError reports a refused connection to an address that is
// not on the public internet.
type BlockedAddressError struct {
	// Addr is the address that was refused.
	Addr netip.Addr
	// Kind names the range: "loopback", "private", "link-local", …
	Kind string
}

// Error implements error.
func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("%s is a %s address: requests to private, loopback, link-local, unspecified and multicast addresses are refused (the operator can allow them with %s=1)",
		e.Addr, e.Kind, EnvAllowPrivate)
}

// errTooManyRedirects is wrapped by CheckRedirect when a fetch redirects
// more often than Config.MaxRedirects allows.
var errTooManyRedirects = errors.New("too many redirects")

// nonPublic lists the ranges checkPublic refuses, with the word used to
// tell the model why.
var nonPublic = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "private (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "private (site-local)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// checkPublic returns a *BlockedAddressError unless addr is a public
// unicast address. IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is checked
// as the IPv4 address it reaches.
func checkPublic(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	if embedded, ok := embeddedIPv4(addr); ok {
		if err := checkPublic(embedded); err != nil {
			return &BlockedAddressError{Addr: addr, Kind: err.(*BlockedAddressError).Kind}
		}
		return nil
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(addr) {
			return &BlockedAddressError{Addr: addr, Kind: r.kind}
		}
	}
	return nil
}

// embeddedIPv4 returns the IPv4 address a NAT64 or 6to4 address routes to.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case !addr.Is6():
		return netip.Addr{}, false
	case nat64Prefix.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// guardedDialer returns a dialer that checks every resolved address just
// before connecting, which covers hostnames, DNS rebinding and redirects.
func (t *Tools) guardedDialer() *net.Dialer {
	d := &net.Dialer{Timeout: t.cfg.Timeout}
	if t.guard == nil {
		return d
	}
	guard := t.guard
	d.Control = func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("parse dial address %q: %w", address, err)
		}
		return guard(ap.Addr())
	}
	return d
}

// checkLiteralHost refuses a URL host that is itself a blocked IP, before
// any request is made. Hostnames are left to the dialer.
func (t *Tools) checkLiteralHost(host string) error {
	if t.guard == nil {
		return nil
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	return t.guard(addr)
}

// checkRedirect limits the number of redirects and refuses a redirect to
// another scheme or to a literal blocked address.
func (t *Tools) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > t.cfg.MaxRedirects {
		return fmt.Errorf("%w: stopped after %d", errTooManyRedirects, t.cfg.MaxRedirects)
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return fmt.Errorf("redirect to unsupported scheme %q (only http and https)", s)
	}
	return t.checkLiteralHost(req.URL.Hostname())
}
