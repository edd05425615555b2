package main_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// blackhole is a TCP proxy to a PostgreSQL server's Unix socket that can
// be cut: while cut it accepts connections and reads what it is sent but
// forwards nothing either way (a network partition, not a refusal: no
// reset, no error, the peer's calls hang); healed, it forwards again,
// what it held included, and connects the connections it held.
type blackhole struct {
	t      *testing.T
	ln     net.Listener
	socket string

	mu     sync.Mutex
	healed chan struct{} // closed while the link is up
	conns  []net.Conn
	wg     sync.WaitGroup
}

// newBlackhole proxies the server of the PostgreSQL URL dbURL (a Unix
// socket, as pgtest's) on a loopback port, and returns it with the URL
// that reaches the same database through it.
func newBlackhole(t *testing.T, dbURL string) (*blackhole, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	sockets, _ := filepath.Glob(filepath.Join(u.Query().Get("host"), ".s.PGSQL.[0-9]*[0-9]"))
	if len(sockets) != 1 {
		t.Fatalf("the server's socket in %s: %v", u.Query().Get("host"), sockets)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{t: t, ln: ln, socket: sockets[0], healed: make(chan struct{})}
	close(b.healed)
	b.wg.Go(b.accept)
	t.Cleanup(b.close)
	via := url.URL{Scheme: "postgres", User: url.User(u.Query().Get("user")), Host: ln.Addr().String(), Path: u.Path,
		RawQuery: "sslmode=disable"}
	return b, via.String()
}

// cut stops the link; heal restores it.
func (b *blackhole) cut() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.healed = make(chan struct{})
}

func (b *blackhole) heal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.healed)
}

// up returns the channel closed while the link is up.
func (b *blackhole) up() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.healed
}

func (b *blackhole) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.track(c)
		b.wg.Go(func() { b.serve(c) })
	}
}

// track keeps c, to close it at the end.
func (b *blackhole) track(c net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.conns = append(b.conns, c)
}

// serve connects c to the server once the link is up and pumps both
// ways.
func (b *blackhole) serve(c net.Conn) {
	<-b.up()
	s, err := net.Dial("unix", b.socket)
	if err != nil {
		c.Close()
		return
	}
	b.track(s)
	var wg sync.WaitGroup
	wg.Go(func() { b.pump(s, c) })
	wg.Go(func() { b.pump(c, s) })
	wg.Wait()
}

// pump copies src to dst, holding what it read while the link is cut.
func (b *blackhole) pump(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-b.up()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.t.Logf("blackhole: %v", err)
			}
			return
		}
	}
}

func (b *blackhole) close() {
	b.ln.Close()
	b.mu.Lock()
	select {
	case <-b.healed:
	default:
		close(b.healed)
	}
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// TestClusterPartitionedWorkerWritesNothingAfterTakeover (issue 39): a
// worker is cut off from PostgreSQL mid-run by a proxy that forwards
// nothing; past its lease the other worker takes its runs over and
// finishes them; then the link heals and the cut-off worker's queued
// writes (events, checkpoints, heartbeats) go through. The store refuses
// every write of the runs it lost: no run's stream has an event stamped
// before the takeover stored after the new owner's events, nor anything
// after its SessionEnd; each run has one end entry and one result.
func TestClusterPartitionedWorkerWritesNothingAfterTakeover(t *testing.T) {
	const n = 6
	cl := newCluster(t)
	link, viaLink := newBlackhole(t, cl.url)
	lease := []string{"AVA_RECOVER_EVERY=1s", "AVA_LEASE_TTL=3s"}
	gw := cl.start("gateway", lease...)
	cut := cl.start("worker", append(lease, "AVA_DATABASE_URL="+viaLink)...)
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "BUSY", n)
	// Every run is under way on the worker behind the link (the only
	// one so far): past its first model call, checkpointed.
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" && sa.Iteration >= 1 })
	heir := cl.start("worker", lease...)
	defer func() {
		if t.Failed() {
			for name, d := range map[string]*daemon{"gateway": gw, "cut-off worker": cut, "heir": heir} {
				kill(t, d)
				t.Logf("%s: %s", name, errorLines(d.stderr.String(), 12))
			}
		}
	}()

	cutAt := time.Now()
	link.cut()
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	t.Logf("cut off → every run taken over and finished by the other worker in %s", time.Since(cutAt).Round(time.Millisecond))
	link.heal()
	// The cut-off worker's queued writes go out now; give them time to
	// land, or to be refused, as its retries pause up to 2 s.
	time.Sleep(8 * time.Second)

	st := cl.store()
	ctx := context.Background()
	for _, j := range jobs {
		r, err := st.GetRun(ctx, j.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != lifecycle.Success || r.Attempts < 1 {
			t.Errorf("%s: %s, attempts %d, %q", j.id, r.Status, r.Attempts, r.Error)
		}
		evs, err := st.ReadEvents(ctx, store.SubagentSessionPrefix+j.id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkStream(t, j.id, evs)
	}
	deliveredOnce(t, st, first.Session, jobs)
	entries := cl.lifecycleEntries(t)
	for _, j := range jobs {
		ends := 0
		for _, e := range entries[j.id] {
			if e.EventType == audit.SubagentComplete || e.EventType == audit.SubagentError || e.EventType == audit.SubagentAborted {
				ends++
			}
		}
		if ends != 1 {
			t.Errorf("%s: %d end entries across the processes' session files, want 1", j.id, ends)
		}
	}
	kill(t, cut)
	refused := strings.Count(cut.stderr.String(), "refused a write of a subagent this process no longer holds") +
		strings.Count(cut.stderr.String(), "publishes nothing of its end")
	t.Logf("the cut-off worker logged %d refusals", refused)
}

// checkStream fails unless a run's stream reads as one owner after
// another: times that never go back (an event a stale owner queued
// before the takeover, stored after the new owner's, would), and one
// SessionEnd, its last event.
func checkStream(t *testing.T, id string, evs []event.Event) {
	t.Helper()
	var prev time.Time
	ends := 0
	for i, ev := range evs {
		if ev.Time.Before(prev) {
			t.Errorf("%s: #%d %s stamped %s after an event stamped %s: a stale owner's write landed after the takeover",
				id, ev.Seq, ev.Type, ev.Time.Format(time.StampMilli), prev.Format(time.StampMilli))
		}
		prev = ev.Time
		if ev.Type == event.SessionEnd {
			ends++
			if i != len(evs)-1 {
				t.Errorf("%s: %d events after its SessionEnd (#%d), the first %s", id, len(evs)-1-i, ev.Seq, evs[i+1].Type)
			}
		}
	}
	if ends != 1 {
		t.Errorf("%s: %d SessionEnds in its stream, want 1", id, ends)
	}
	if t.Failed() {
		for _, ev := range evs {
			t.Logf("%s #%d %s %s %s", id, ev.Seq, ev.Time.Format(time.StampMilli), ev.Type, fmt.Sprintf("%.80s", ev.Content))
		}
	}
}
