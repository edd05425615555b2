package subagent_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/observe"
	"github.com/avaagent/ava/question"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/subagent"
)

// collector is an observer that keeps every notice.
type collector struct {
	mu        sync.Mutex
	started   []observe.RunStarted
	ended     []observe.RunEnded
	turns     []observe.TurnEnded
	made      []observe.ProposalMade
	decided   []observe.ProposalDecided
	asked     []observe.QuestionAsked
	answered  []observe.QuestionAnswered
	blockedBy chan struct{} // when set, every notice waits for it
}

func (c *collector) observer() observe.Observer {
	keep := func(f func()) {
		if c.blockedBy != nil {
			<-c.blockedBy
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		f()
	}
	return observe.Observer{
		RunStarted:      func(_ context.Context, n observe.RunStarted) { keep(func() { c.started = append(c.started, n) }) },
		RunEnded:        func(_ context.Context, n observe.RunEnded) { keep(func() { c.ended = append(c.ended, n) }) },
		TurnEnded:       func(_ context.Context, n observe.TurnEnded) { keep(func() { c.turns = append(c.turns, n) }) },
		ProposalMade:    func(_ context.Context, n observe.ProposalMade) { keep(func() { c.made = append(c.made, n) }) },
		ProposalDecided: func(_ context.Context, n observe.ProposalDecided) { keep(func() { c.decided = append(c.decided, n) }) },
		QuestionAsked:   func(_ context.Context, n observe.QuestionAsked) { keep(func() { c.asked = append(c.asked, n) }) },
		QuestionAnswered: func(_ context.Context, n observe.QuestionAnswered) {
			keep(func() { c.answered = append(c.answered, n) })
		},
	}
}

// waitFor polls until ok holds (under c's lock) or fails the test.
func (c *collector) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		done := ok()
		c.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("observer never saw %s", what)
		}
	}
}

// observed is a harness whose manager notifies a Set, closed (drained)
// at the end of the test.
func observed(t *testing.T, script string, adjust func(*subagent.Options)) (*harness, *observe.Set) {
	t.Helper()
	set := observe.New(observe.Options{})
	h := newHarness(t, script, func(o *subagent.Options) {
		o.Observers = set
		if adjust != nil {
			adjust(o)
		}
	})
	t.Cleanup(func() { set.Close(context.Background()) })
	return h, set
}

// TestEveryObserverSeesEveryRun: two observers both hear of every start
// and end of concurrent runs (one settable callback would keep only the
// last one added), and a third that blocks slows neither the runs nor
// them.
func TestEveryObserverSeesEveryRun(t *testing.T) {
	const runs = 6
	h, set := observed(t, answerScript, func(o *subagent.Options) { o.Overflow = subagent.OverflowQueue })
	a, b := &collector{}, &collector{}
	blocked := &collector{blockedBy: make(chan struct{})}
	defer close(blocked.blockedBy)
	set.Add(a.observer())
	set.Add(blocked.observer())
	set.Add(b.observer())

	var hds []*subagent.Handle
	for range runs {
		hds = append(hds, h.spawn(t, subagent.Config{Role: "researcher", Task: "count competitors"}))
	}
	for _, hd := range hds {
		if r := wait(t, hd); r.Status != lifecycle.Success {
			t.Fatalf("%s ended %s: %s", hd.ID(), r.Status, r.Error)
		}
	}
	for _, c := range []*collector{a, b} {
		c.waitFor(t, "every run's end", func() bool { return len(c.ended) == runs })
		c.mu.Lock()
		if len(c.started) != runs {
			t.Errorf("observer saw %d starts, want %d", len(c.started), runs)
		}
		for _, hd := range hds {
			i := slices.IndexFunc(c.ended, func(n observe.RunEnded) bool { return n.RunID == hd.UUID() })
			if i < 0 {
				t.Fatalf("no RunEnded for %s", hd.ID())
			}
			n := c.ended[i]
			if n.SubagentID != hd.ID() || n.Parent != parent.SessionKey || n.Session != hd.SessionKey() || n.Role != "researcher" ||
				n.Status != lifecycle.Success || n.Tokens != 120 || n.Iterations != 1 || n.CostCents <= 0 || n.Time.IsZero() {
				t.Errorf("RunEnded %+v", n)
			}
			if !slices.ContainsFunc(c.started, func(s observe.RunStarted) bool {
				return s.RunID == hd.UUID() && s.Parent == parent.SessionKey && !s.Resumed
			}) {
				t.Errorf("no RunStarted for %s: %+v", hd.ID(), c.started)
			}
		}
		c.mu.Unlock()
	}
}

// TestFollowUpIsATurnEnded: a follow-up's end is a TurnEnded of the run,
// not a second RunEnded.
func TestFollowUpIsATurnEnded(t *testing.T) {
	h, set := observed(t, `
turns:
  - text: "first"
  - text: "second"
`, nil)
	c := &collector{}
	set.Add(c.observer())
	hd := h.spawn(t, subagent.Config{Role: "researcher", Task: "look"})
	wait(t, hd)
	if _, err := h.m.Send(context.Background(), hd.ID(), "and then?", false); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "the follow-up's end", func() bool { return len(c.turns) == 1 })
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.turns[0]
	if n.RunID != hd.UUID() || n.SubagentID != hd.ID() || n.Parent != parent.SessionKey || n.Turn != 2 || n.Status != lifecycle.Success {
		t.Errorf("TurnEnded %+v", n)
	}
	if len(c.started) != 1 || len(c.ended) != 1 {
		t.Errorf("starts %d, ends %d; want 1 each", len(c.started), len(c.ended))
	}
}

// TestProposalNotices: a proposal made, then confirmed, rejected or
// expired, each with its IDs and who decided.
func TestProposalNotices(t *testing.T) {
	clock := &stepClock{now: time.Now()}
	set := observe.New(observe.Options{})
	t.Cleanup(func() { set.Close(context.Background()) })
	p, _ := confirm.ParsePolicy("always")
	h := newHarness(t, answerScript, func(o *subagent.Options) {
		o.Confirm, o.ConfirmTimeout, o.ExpireEvery, o.Clock, o.Observers = p, 10*time.Minute, time.Hour, clock.Now, set
	})
	c := &collector{}
	set.Add(c.observer())
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "web_crawler", Task: "research pricing"}))
	}
	d, err := h.m.Decide(context.Background(), ids[0], confirm.Modified, confirm.Change{MaxCostCents: 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Decide(context.Background(), ids[1], confirm.Rejected, confirm.Change{}); err != nil {
		t.Fatal(err)
	}
	clock.Add(11 * time.Minute)
	if n, err := h.m.ExpireProposals(context.Background()); err != nil || n != 1 {
		t.Fatalf("expired %d: %v", n, err)
	}
	c.waitFor(t, "three decisions", func() bool { return len(c.decided) == 3 })
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.made {
		if m.ProposalID != ids[i] || m.Session != parent.SessionKey || m.Role != "web_crawler" || m.Task != "research pricing" ||
			m.MaxCostCents <= 0 || m.ExpiresAt.IsZero() {
			t.Errorf("ProposalMade %d: %+v", i, m)
		}
	}
	want := []observe.ProposalDecided{
		{ProposalID: ids[0], Decision: observe.Modified, By: observe.ByPerson, Change: d.Change, SubagentIDs: d.SubagentIDs},
		{ProposalID: ids[1], Decision: observe.Rejected, By: observe.ByPerson},
		{ProposalID: ids[2], Decision: observe.Expired, By: observe.ByExpiry},
	}
	for i, w := range want {
		g := c.decided[i]
		if g.ProposalID != w.ProposalID || g.Decision != w.Decision || g.By != w.By || g.Change != w.Change ||
			!slices.Equal(g.SubagentIDs, w.SubagentIDs) || g.Session != parent.SessionKey || g.Role != "web_crawler" {
			t.Errorf("ProposalDecided %d: %+v, want %+v", i, g, w)
		}
	}
	if len(d.SubagentIDs) != 1 || d.Change == "" {
		t.Errorf("decided %+v", d)
	}
}

// TestQuestionNotices: a subagent's question and its answer, with the
// run's IDs and who answered.
func TestQuestionNotices(t *testing.T) {
	h, set := observed(t, `
turns:
  - tool_calls: [{name: ask_user, args: {question: "Which branch?"}}]
  - text: "done"
`, func(o *subagent.Options) {
		o.Roles = map[string]role.Role{"asker": {Name: "asker", Tools: []string{"read_file", subagent.AskUserTool},
			Model: "haiku", Limits: role.DefaultLimits}}
	})
	c := &collector{}
	set.Add(c.observer())
	hd := h.spawn(t, subagent.Config{Role: "asker", Task: "ask"})
	c.waitFor(t, "the question", func() bool { return len(c.asked) == 1 })
	c.mu.Lock()
	q := c.asked[0]
	c.mu.Unlock()
	if q.Session != parent.SessionKey || q.SubagentID != hd.ID() || q.RunID != hd.UUID() || q.Role != "asker" ||
		q.Text != "Which branch?" || q.ExpiresAt.IsZero() {
		t.Fatalf("QuestionAsked %+v", q)
	}
	if _, err := h.m.AnswerQuestion(q.QuestionID, parent.SessionKey, "main", question.ByPerson); err != nil {
		t.Fatal(err)
	}
	wait(t, hd)
	c.waitFor(t, "the answer", func() bool { return len(c.answered) == 1 })
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.answered[0]
	if a.QuestionID != q.QuestionID || a.Session != parent.SessionKey || a.RunID != hd.UUID() || a.Answer != "main" || a.By != question.ByPerson {
		t.Errorf("QuestionAnswered %+v", a)
	}
}

// TestRecoveryNotices: a run taken over from a gone process is started
// (resumed) and ended here; one that may not resume is ended interrupted
// by recovery — each told to the observers after the store has it.
func TestRecoveryNotices(t *testing.T) {
	h, set := observed(t, "turns:\n  - text: finished\n", nil)
	c := &collector{}
	set.Add(c.observer())
	resumed := seedDeadRun(t, h, "S-b1b1b1", "researcher", 0, []llm.Message{llm.UserText("Begin the task: resume me")})
	stopped := seedDeadRun(t, h, "S-b2b2b2", "code_reviewer", 0, []llm.Message{llm.UserText("Begin the task: resume me")})
	if err := h.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitRun(t, h, resumed.ID)
	waitRun(t, h, stopped.ID)
	c.waitFor(t, "both ends", func() bool { return len(c.ended) == 2 })
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.started) != 1 || c.started[0].RunID != resumed.ID || !c.started[0].Resumed || c.started[0].Attempt != 1 {
		t.Errorf("starts %+v, want the resumed run's", c.started)
	}
	for _, n := range c.ended {
		switch n.RunID {
		case resumed.ID:
			if n.Status != lifecycle.Success || n.SubagentID != resumed.ShortID || n.Parent != parent.SessionKey {
				t.Errorf("resumed run's end %+v", n)
			}
		case stopped.ID:
			if n.Status != lifecycle.Interrupted || n.SubagentID != stopped.ShortID || n.Role != "code_reviewer" || n.Parent != parent.SessionKey {
				t.Errorf("interrupted run's end %+v", n)
			}
		default:
			t.Errorf("end of an unknown run %+v", n)
		}
	}
}
