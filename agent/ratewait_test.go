package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
)

// rateLimited is a model whose every call first waits wait for its
// turn under a rate limit, as llm/ratelimit does: told to the
// context's WaitNotice.
func rateLimited(wait time.Duration) providerFunc {
	return func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		done := llm.NoticeWait(ctx, wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			done()
			return nil, context.Cause(ctx)
		}
		done()
		return &llm.Response{StopReason: llm.StopEndTurn, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("answer")}}}, nil
	}
}

// A call waiting for its rate limit shows it as the run's activity, and
// the wait is kept off the run's timeout: a 300 ms wait in a run of
// 100 ms ends in success.
func TestRateLimitWaitShownAndOffTheTimeout(t *testing.T) {
	rec := &recorder{}
	res := run(t, agent.Config{Model: llm.Model{Provider: rateLimited(300 * time.Millisecond), ID: "m"},
		Limits: agent.Limits{Timeout: 100 * time.Millisecond}, Publisher: rec}, context.Background())
	if res.Status != lifecycle.Success {
		t.Fatalf("status %s (%v), want success: the wait counted against the timeout", res.Status, res.Err)
	}
	var activities []string
	rec.mu.Lock()
	for _, ev := range rec.evs {
		if ev.Type == event.Activity {
			var c event.TextContent
			if err := ev.Decode(&c); err != nil {
				t.Fatal(err)
			}
			activities = append(activities, c.Text)
		}
	}
	rec.mu.Unlock()
	want := agent.RateLimitActivity + " on test/m"
	if len(activities) < 3 || !strings.HasPrefix(activities[1], want) || activities[2] != "calling test/m" {
		t.Errorf("activities %q, want calling, %q…, calling again", activities, want)
	}
}
