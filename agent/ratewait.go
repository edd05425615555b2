package agent

import (
	"fmt"
	"time"
)

// MaxRateLimitPause bounds how much of a run's waiting for a provider's
// rate limit is kept off its timeout, over the whole run: waits beyond
// it count, so that a key starved for hours still ends its runs on time.
const MaxRateLimitPause = 10 * time.Minute

// RateLimitActivity starts the activity a run shows while a model call
// waits for its turn under the provider's rate limit.
const RateLimitActivity = "waiting for rate limit"

// rateWait is the run's llm.WaitNotice: it shows the wait as the run's
// activity and pauses the run's timeout for it, up to what is left of
// MaxRateLimitPause. The returned function ends the wait.
func (r *run) rateWait(wait time.Duration) func() {
	a := r.a
	a.activity(fmt.Sprintf("%s on %s (about %s)", RateLimitActivity, a.cfg.Model.Name(), wait.Round(100*time.Millisecond)))
	left := MaxRateLimitPause - r.ratePaused
	start := time.Now()
	resume, stop := func() {}, func() bool { return false }
	if r.clock != nil && left > 0 {
		resume = r.clock.pause()
		stop = time.AfterFunc(left, resume).Stop
	}
	return func() {
		stop()
		resume()
		r.ratePaused += min(time.Since(start), max(left, 0))
		a.touch()
		a.activity("calling " + a.cfg.Model.Name())
	}
}
