package gateway

import (
	"testing"
	"time"
)

// TestConnLimitDefaults: the default bound of connections leaves a
// quarter of the descriptor limit (at least 256) to the rest of the
// process, and unauthenticated connections get a quarter of it, from 16
// to 1024, always below the bound.
func TestConnLimitDefaults(t *testing.T) {
	for _, c := range []struct {
		nofile    uint64
		max, anon int
	}{
		{0, 1024, 256},       // unknown
		{256, 64, 16},        // tiny: what the reserve leaves is too little
		{512, 256, 64},       // ulimit -n 512
		{1024, 768, 192},     // a common soft limit
		{20000, 15000, 1024}, // the probe's machine
		{100000, 65536, 1024},
		{1 << 20, 65536, 1024}, // systemd's default hard limit
		{^uint64(0), 65536, 1024},
	} {
		l := ConnLimits{Max: maxConnsFrom(c.nofile)}.withDefaults()
		if l.Max != c.max || l.Unauthenticated != c.anon || l.UnauthenticatedIdle != DefaultUnauthenticatedIdle {
			t.Errorf("nofile %d: %+v, want max %d, unauthenticated %d", c.nofile, l, c.max, c.anon)
		}
	}
	if l := (ConnLimits{Max: 10, Unauthenticated: 50, UnauthenticatedIdle: time.Second}).withDefaults(); l.Unauthenticated != 9 {
		t.Errorf("unauthenticated above max: %+v, want 9", l)
	}
}
