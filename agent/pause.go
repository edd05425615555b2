package agent

import (
	"context"
	"sync"
	"time"
)

// runClock is a run's wall-clock limit, which a tool may pause while it
// waits for a person (a subagent's ask_user): the time spent waiting does
// not count against the run's timeout.
type runClock struct {
	mu       sync.Mutex
	timer    *time.Timer
	left     time.Duration // of the limit, as of since
	since    time.Time     // when the current running stretch began
	paused   int           // pauses in force
	idle     time.Duration // time spent paused
	pausedAt time.Time
}

type clockKey struct{}

// startClock starts a limit that calls fire when it runs out.
func startClock(limit time.Duration, fire func()) *runClock {
	return &runClock{timer: time.AfterFunc(limit, fire), left: limit, since: time.Now()}
}

// stop releases the timer.
func (c *runClock) stop() { c.timer.Stop() }

// pause stops the clock until the returned resume is called (once; more
// calls are no-ops). Pauses nest.
func (c *runClock) pause() func() {
	c.mu.Lock()
	if c.paused == 0 && c.timer.Stop() {
		now := time.Now()
		c.left -= now.Sub(c.since)
		c.pausedAt = now
	}
	c.paused++
	c.mu.Unlock()
	var once sync.Once
	return func() { once.Do(c.resume) }
}

func (c *runClock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused--
	if c.paused > 0 || c.pausedAt.IsZero() {
		return
	}
	now := time.Now()
	c.idle += now.Sub(c.pausedAt)
	c.since, c.pausedAt = now, time.Time{}
	c.timer.Reset(max(c.left, 0))
}

// waited is the time the clock spent paused so far.
func (c *runClock) waited() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pausedAt.IsZero() {
		return c.idle + time.Since(c.pausedAt)
	}
	return c.idle
}

// PauseTimeout stops the run's wall-clock limit while a tool of the run
// waits for a person, until the returned resume is called. Outside a run
// with a timeout it does nothing.
func PauseTimeout(ctx context.Context) (resume func()) {
	if c, ok := ctx.Value(clockKey{}).(*runClock); ok {
		return c.pause()
	}
	return func() {}
}
