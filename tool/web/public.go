package web

import "net/netip"

// CheckPublic returns a *BlockedAddressError unless addr is a public
// unicast address: the web tools' address guard, shared with the process
// sandbox's egress proxy so both refuse the same addresses.
func CheckPublic(addr netip.Addr) error { return checkPublic(addr) }
