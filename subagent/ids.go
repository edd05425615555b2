package subagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
)

// maxIDDraws bounds the draws of one short ID: a random draw finds a free
// ID at once unless the 24-bit space is nearly full, or the source of
// randomness (Options.Rand) keeps repeating itself.
const maxIDDraws = 1 << 26

// idSet holds every short ID in use. Short IDs are "S-" and six hex
// digits, 24 bits, so a 2 MiB bitset covers them all: a spawn checks and
// takes an ID without a store read. It is filled from the store at Start;
// a run recorded by another process since is caught when the run's
// record is refused (Manager.claim).
type idSet struct {
	bits []uint64
	rand io.Reader
}

// newIDSet returns an empty set drawing from r (crypto/rand when nil).
func newIDSet(r io.Reader) *idSet {
	if r == nil {
		r = rand.Reader
	}
	return &idSet{bits: make([]uint64, 1<<24/64), rand: r}
}

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

// remove marks id as free again: it was drawn for a spawn that was
// refused before anything was recorded under it.
func (s *idSet) remove(id string) {
	if n, err := parseShortID(id); err == nil {
		s.bits[n/64] &^= 1 << (n % 64)
	}
}

// draw takes a random free ID. It fails only if the source of randomness
// fails or no free ID turns up in maxIDDraws draws.
func (s *idSet) draw() (string, error) {
	for range maxIDDraws {
		var b [3]byte
		if _, err := io.ReadFull(s.rand, b[:]); err != nil {
			return "", fmt.Errorf("draw subagent ID: %w", err)
		}
		n := uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
		if s.bits[n/64]&(1<<(n%64)) == 0 {
			s.bits[n/64] |= 1 << (n % 64)
			return "S-" + hex.EncodeToString(b[:]), nil
		}
	}
	return "", fmt.Errorf("draw subagent ID: no free short ID in %d draws", maxIDDraws)
}

// assignIDs gives each new handle of hs (one without an ID; a follow-up
// keeps its own) a short ID this process knows to be free (idSet, filled
// from the store at Start and kept by every spawn). Another process may
// have recorded a run under it since: the run's record, written before
// the spawn returns and before the ID is used anywhere, is refused then,
// and claim draws again (Manager.claim).
func (m *Manager) assignIDs(_ context.Context, hs ...*Handle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range hs {
		if h.id != "" {
			continue
		}
		id, err := m.ids.draw()
		if err != nil {
			for _, d := range hs[:i] {
				if d.uuid == "" {
					m.ids.remove(d.id)
					d.id = ""
				}
			}
			return fmt.Errorf("spawn: %w", err)
		}
		h.id = id
	}
	return nil
}

// dropIDs frees the IDs assigned to new handles that will not start
// (their spawn was refused before anything was recorded).
func (m *Manager) dropIDs(hs ...*Handle) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range hs {
		if h.id != "" && h.uuid == "" {
			m.ids.remove(h.id)
			h.id = ""
		}
	}
}
