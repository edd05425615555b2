package subagent

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
)

// idSet holds every short ID in use. Short IDs are "S-" and six hex
// digits, 24 bits, so a 2 MiB bitset covers them all: a spawn checks and
// takes an ID without a store read. It is filled from the store at Start;
// the store's unique index still catches a clash with a run recorded by
// another process since.
type idSet struct{ bits []uint64 }

func newIDSet() *idSet { return &idSet{bits: make([]uint64, 1<<24/64)} }

// parseShortID returns the 24-bit number of an S-xxxxxx ID.
func parseShortID(id string) (uint32, error) {
	if len(id) != 8 || id[:2] != "S-" {
		return 0, fmt.Errorf("short ID %q: want S- and six hex characters", id)
	}
	n, err := strconv.ParseUint(id[2:], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("short ID %q: %w", id, err)
	}
	return uint32(n), nil
}

// add marks id as taken (ignoring malformed IDs).
func (s *idSet) add(id string) {
	if n, err := parseShortID(id); err == nil {
		s.bits[n/64] |= 1 << (n % 64)
	}
}

// draw takes a random free ID. It panics only if all 16.7 million are
// taken.
func (s *idSet) draw() string {
	for range 1 << 26 {
		var b [3]byte
		_, _ = rand.Read(b[:])
		n := uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
		if s.bits[n/64]&(1<<(n%64)) == 0 {
			s.bits[n/64] |= 1 << (n % 64)
			return "S-" + hex.EncodeToString(b[:])
		}
	}
	panic("subagent: no free short ID left")
}
