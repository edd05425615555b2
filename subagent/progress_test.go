package subagent_test

import (
	"context"
	"testing"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/subagent"
)

// A long-running subagent's parent hears how it is doing, unprompted:
// after ProgressAfter, then every ProgressEvery, until it ends.
func TestProgressNotices(t *testing.T) {
	h := newHarness(t, "turns:\n  - text: slow\n    delay: 400ms\n", func(o *subagent.Options) {
		o.ProgressAfter, o.ProgressEvery = 50*time.Millisecond, 100*time.Millisecond
	})
	sub := h.hub.Subscribe(parent.SessionKey, 0)
	defer sub.Close()
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "take your time"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var progress []event.SubagentProgressContent
	for done := false; !done; {
		evs, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %d notices: %v", len(progress), err)
		}
		for _, ev := range evs {
			switch ev.Type {
			case event.SubagentProgress:
				var c event.SubagentProgressContent
				if err := ev.Decode(&c); err != nil {
					t.Fatal(err)
				}
				progress = append(progress, c)
			case event.SubagentComplete:
				done = true
			}
		}
	}
	wait(t, hd)
	// 400 ms with a notice after 50 ms and then every 100 ms: 2 to 4 of
	// them, each for this run, later than the one before.
	if len(progress) < 1 || len(progress) > 8 {
		t.Fatalf("%d progress notices: %+v", len(progress), progress)
	}
	for i, p := range progress {
		if p.SubagentID != hd.ID() || p.Role != "researcher" || p.ElapsedMs < 50 || (i > 0 && p.ElapsedMs <= progress[i-1].ElapsedMs) {
			t.Fatalf("notice %d: %+v", i, p)
		}
	}
}
