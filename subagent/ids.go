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

// idSet holds the short IDs this process drew or found taken. Short IDs
// are "S-" and six hex digits, 24 bits, so a 2 MiB bitset (its pages
// touched only where an ID falls) covers them all. The store, not the
// set, says whether an ID is free (Manager.assignIDs asks it about every
// draw): the set only keeps a draw from being handed out twice by this
// process before its run is recorded. It is not filled from the store at
// start: that read every run's ID, a cost that grew with the data root's
// history on every command's start (90–180 ms at 100,000
// runs), while a random draw in a space of 16.7 million is free at the
// first try until the space fills.
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
// keeps its own) a short ID that no run of the data root has. The draw
// avoids every ID this process knows (idSet); the store is then asked
// about the drawn one, which an earlier run or another process on the
// same store may have taken. A taken ID is kept out of later draws and
// another is drawn. This happens before the ID is used
// anywhere (event stream, parent's SubagentSpawn, run record), so a
// clash never reaches a stream or record of the other run.
//
// Two processes can still draw the same ID between this check and
// writing the run record (a window of a fraction of a millisecond in a
// space of 16.7 million IDs); the record's unique index then refuses the
// second with store.ErrDuplicate, and that run ends with the error
// (Handle.recordRun) before its loop starts, writing nothing to the
// store or the ID's stream (both the other run's); only its parent is
// told.
func (m *Manager) assignIDs(ctx context.Context, hs ...*Handle) error {
	for i, h := range hs {
		if h.id != "" {
			continue
		}
		id, err := m.freeID(ctx)
		if err != nil {
			m.dropIDs(hs[:i]...)
			return fmt.Errorf("spawn: %w", err)
		}
		h.id = id
	}
	return nil
}

// freeID draws IDs until one is unknown to the store too.
func (m *Manager) freeID(ctx context.Context) (string, error) {
	for range maxIDDraws {
		m.mu.Lock()
		id, err := m.ids.draw()
		m.mu.Unlock()
		if err != nil {
			return "", err
		}
		taken, err := m.opt.Store.ShortIDExists(ctx, id)
		if err != nil {
			m.dropIDs(&Handle{id: id})
			return "", fmt.Errorf("check subagent ID %s: %w", id, err)
		}
		if !taken {
			return id, nil
		}
		m.log.Debug("subagent ID taken by an earlier run; drawing again", "id", id)
	}
	return "", fmt.Errorf("draw subagent ID: every draw was taken")
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
