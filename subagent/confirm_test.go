package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avaagent/ava/confirm"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// stepClock is a clock a test moves by hand.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// confirming is a harness whose spawn tools ask per policy.
func confirming(t *testing.T, policy string, clock *stepClock) *harness {
	t.Helper()
	p, err := confirm.ParsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, answerScript, func(o *subagent.Options) {
		o.Confirm, o.ConfirmTimeout, o.ExpireEvery = p, 10*time.Minute, time.Hour
		if clock != nil {
			o.Clock = clock.Now
		}
	})
}

// callTool runs the orchestrator tool name with args as the parent.
func (h *harness) callTool(t *testing.T, name string, args any) tool.Result {
	t.Helper()
	for _, tl := range h.m.Tools() {
		if tl.Name() == name {
			res, err := tl.Run(tool.WithCaller(context.Background(), parent), mustJSON(args))
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}
}

// proposed reads the pending ID out of a spawn tool's result.
func proposed(t *testing.T, res tool.Result) string {
	t.Helper()
	var out struct {
		PendingID string `json:"pending_id"`
		Status    string `json:"status"`
	}
	if err := json.Unmarshal([]byte(res.Output), &out); err != nil || out.Status != "awaiting_confirmation" || !strings.HasPrefix(out.PendingID, "P-") {
		t.Fatalf("spawn tool result is not a proposal: %v\n%s", err, res.Output)
	}
	if len(out.PendingID) != 8 {
		t.Fatalf("pending ID %q is not P- and six hex characters", out.PendingID)
	}
	return out.PendingID
}

func (h *harness) runCount(t *testing.T) int {
	t.Helper()
	runs, err := h.store.ListRuns(context.Background(), store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(runs)
}

// notes returns the [Subagent] messages in the parent's history.
func (h *harness) notes(t *testing.T) []string {
	t.Helper()
	msgs, err := h.store.Messages(context.Background(), parent.SessionKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Role == store.RoleSubagent {
			out = append(out, m.Text)
		}
	}
	return out
}

// eventsOf returns the parent stream's events of type typ.
func (h *harness) eventsOf(t *testing.T, typ event.Type) []event.Event {
	t.Helper()
	evs, err := h.store.ReadEvents(context.Background(), parent.SessionKey, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestProposalConfirmedStartsInTheBackground(t *testing.T) {
	h := confirming(t, "always", nil)
	res := h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "web_crawler", Task: "research pricing",
		Rationale: "pricing pages are many and long"})
	id := proposed(t, res)
	if !strings.Contains(res.Output, "only they can give") {
		t.Fatalf("the model is not told that only the person decides:\n%s", res.Output)
	}
	if n := h.runCount(t); n != 0 {
		t.Fatalf("%d runs started before confirmation", n)
	}
	evs := h.eventsOf(t, event.SpawnProposed)
	if len(evs) != 1 {
		t.Fatalf("%d SpawnProposed events, want 1", len(evs))
	}
	var c event.SpawnProposedContent
	must(t, evs[0].Decode(&c))
	if c.PendingID != id || c.Role != "web_crawler" || c.Task != "research pricing" || c.Estimate.MaxSeconds != 600 ||
		c.Estimate.MaxCostCents != 50 || !strings.Contains(c.Text, "Proceed? [Yes/No]") || !strings.Contains(c.Text, "Why: pricing pages") {
		t.Fatalf("SpawnProposed content %+v", c)
	}
	d, err := h.m.Decide(context.Background(), id, confirm.Confirmed, confirm.Change{})
	must(t, err)
	if d.Decision != store.SpawnConfirmed || len(d.SubagentIDs) != 1 {
		t.Fatalf("decided %+v", d)
	}
	hd, err := h.m.Get(d.SubagentIDs[0])
	must(t, err)
	if r := wait(t, hd); r.Status != lifecycle.Success {
		t.Fatalf("confirmed run ended %s", r.Status)
	}
	waitFor(t, func() bool { return len(h.notes(t)) == 2 })
	// The note and the result are both in the history; a fast run's
	// result may come first.
	if notes := strings.Join(h.notes(t), "\n"); !strings.Contains(notes, "The person confirmed it; started "+d.SubagentIDs[0]) ||
		!strings.Contains(notes, "[Task: research pricing]") {
		t.Fatalf("parent history: %q", notes)
	}
	_, err = h.m.Decide(context.Background(), id, confirm.Rejected, confirm.Change{})
	if !errors.Is(err, subagent.ErrDecided) {
		t.Fatalf("deciding twice: %v, want ErrDecided", err)
	}
	p, err := h.m.Proposal(context.Background(), id)
	must(t, err)
	if p.Status != store.SpawnConfirmed {
		t.Fatalf("stored status %s", p.Status)
	}
}

func TestProposalRejected(t *testing.T) {
	h := confirming(t, "always", nil)
	id := proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "researcher", Task: "dig"}))
	d, err := h.m.Answer(context.Background(), id, "no thanks")
	must(t, err)
	if d.Decision != store.SpawnRejected || h.runCount(t) != 0 {
		t.Fatalf("decided %+v with %d runs", d, h.runCount(t))
	}
	if notes := h.notes(t); len(notes) != 1 || !strings.Contains(notes[0], "declined") {
		t.Fatalf("parent history: %q", notes)
	}
	if evs := h.eventsOf(t, event.SpawnDecided); len(evs) != 1 {
		t.Fatalf("%d SpawnDecided events", len(evs))
	}
	if ps, _ := h.m.Proposals(context.Background(), ""); len(ps) != 0 {
		t.Fatalf("still pending: %+v", ps)
	}
}

func TestProposalModified(t *testing.T) {
	h := confirming(t, "always", nil)
	id := proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "researcher", Task: "dig", Model: "opus"}))
	_, err := h.m.Answer(context.Background(), id, "maybe")
	if !errors.Is(err, subagent.ErrUnclear) {
		t.Fatalf("unclear answer: %v, want ErrUnclear", err)
	}
	if h.runCount(t) != 0 {
		t.Fatal("an unclear answer started the spawn")
	}
	d, err := h.m.Answer(context.Background(), id, "yes but use haiku, max $0.30")
	must(t, err)
	if d.Change != "model haiku, max cost $0.30" || d.Proposal.Spawn.Configs[0].Model != "haiku" {
		t.Fatalf("modified %+v", d)
	}
	hd, err := h.m.Get(d.SubagentIDs[0])
	must(t, err)
	if hd.Limits().MaxCostCents != 30 || hd.Config().Model != "haiku" {
		t.Fatalf("run started with %+v, model %s", hd.Limits(), hd.Config().Model)
	}
	wait(t, hd)
	p, err := h.m.Proposal(context.Background(), id)
	must(t, err)
	if p.Spawn.Configs[0].MaxCostCents != 30 || p.Estimate.MaxCostCents > 30 {
		t.Fatalf("stored proposal not modified: %+v", p)
	}
}

func TestProposalExpires(t *testing.T) {
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	h := confirming(t, "always", clock)
	id := proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "researcher", Task: "dig"}))
	clock.Add(9 * time.Minute)
	n, err := h.m.ExpireProposals(context.Background())
	must(t, err)
	if n != 0 {
		t.Fatalf("expired %d before its time", n)
	}
	clock.Add(2 * time.Minute)
	n, err = h.m.ExpireProposals(context.Background())
	must(t, err)
	if n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	n, _ = h.m.ExpireProposals(context.Background())
	if n != 0 {
		t.Fatalf("expired again: %d", n)
	}
	_, err = h.m.Decide(context.Background(), id, confirm.Confirmed, confirm.Change{})
	if !errors.Is(err, store.ErrExpired) && !errors.Is(err, subagent.ErrDecided) {
		t.Fatalf("confirming an expired proposal: %v", err)
	}
	if h.runCount(t) != 0 {
		t.Fatal("an expired proposal started")
	}
	notes := h.notes(t)
	if len(notes) != 1 || !strings.Contains(notes[0], "expired after 10 min") {
		t.Fatalf("the orchestrator is told %q, want one expiry note", notes)
	}
}

// TestDecidingAtExpiryTellsOnce: a yes that comes in after the expiry
// but before the sweep is refused, and the orchestrator still hears of
// the expiry exactly once.
func TestDecidingAtExpiryTellsOnce(t *testing.T) {
	clock := &stepClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	h := confirming(t, "always", clock)
	id := proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "researcher", Task: "dig"}))
	clock.Add(11 * time.Minute)
	_, err := h.m.Decide(context.Background(), id, confirm.Confirmed, confirm.Change{})
	if !errors.Is(err, store.ErrExpired) {
		t.Fatalf("late yes: %v, want ErrExpired", err)
	}
	h.m.ExpireProposals(context.Background())
	if notes := h.notes(t); len(notes) != 1 {
		t.Fatalf("expiry told %d times", len(notes))
	}
}

// TestModelCannotConfirmItsOwnProposal: no orchestrator tool decides a
// proposal, and spawning the same thing again only proposes again.
func TestModelCannotConfirmItsOwnProposal(t *testing.T) {
	h := confirming(t, "always", nil)
	args := subagent.SpawnArgs{Role: "researcher", Task: "dig"}
	first := proposed(t, h.callTool(t, "spawn_subagent", args))
	second := proposed(t, h.callTool(t, "spawn_subagent", args))
	group := proposed(t, h.callTool(t, "spawn_subagents", subagent.GroupArgs{Mode: "parallel", Tasks: []subagent.SpawnArgs{args}}))
	if first == second || second == group {
		t.Fatal("pending IDs repeat")
	}
	h.callTool(t, "subagent_status", subagent.IDArgs{SubagentID: first})
	h.callTool(t, "cancel_subagent", subagent.IDArgs{SubagentID: first})
	for _, tl := range h.m.Tools() {
		var schema map[string]any
		_ = json.Unmarshal(tl.Schema(), &schema)
		if strings.Contains(tl.Name(), "confirm") || strings.Contains(fmt.Sprint(schema), "pending") {
			t.Errorf("tool %s can name a proposal", tl.Name())
		}
	}
	if n := h.runCount(t); n != 0 {
		t.Fatalf("%d runs started without the person", n)
	}
	ps, err := h.m.Proposals(context.Background(), parent.SessionKey)
	must(t, err)
	if len(ps) != 3 {
		t.Fatalf("%d proposals pending, want 3", len(ps))
	}
}

// TestConfirmAboveThreshold: above:<cents> asks only when the estimated
// maximum cost (the 50¢ cap of web_crawler) is above it.
func TestConfirmAboveThreshold(t *testing.T) {
	below := confirming(t, "above:60", nil)
	res := below.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "web_crawler", Task: "cheap", Background: true})
	if strings.Contains(res.Output, "awaiting_confirmation") || below.runCount(t) != 1 {
		t.Fatalf("a 50¢ spawn under above:60 was not started:\n%s", res.Output)
	}
	above := confirming(t, "above:40", nil)
	proposed(t, above.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "web_crawler", Task: "dear", Background: true}))
	if above.runCount(t) != 0 {
		t.Fatal("a 50¢ spawn under above:40 started")
	}
	// The threshold compares the estimate: a lower cap makes it cheap.
	proposedRes := above.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "web_crawler", Task: "capped", MaxCostCents: 30, Background: true})
	if strings.Contains(proposedRes.Output, "awaiting_confirmation") {
		t.Fatalf("a 30¢ spawn under above:40 was proposed:\n%s", proposedRes.Output)
	}
}

// TestGroupProposedAsOne: a group is one proposal with the group's total.
func TestGroupProposedAsOne(t *testing.T) {
	h := confirming(t, "always", nil)
	id := proposed(t, h.callTool(t, "spawn_subagents", subagent.GroupArgs{Mode: "parallel", BudgetCents: 80, Tasks: []subagent.SpawnArgs{
		{Role: "web_crawler", Task: "a"}, {Role: "researcher", Task: "b"}}}))
	p, err := h.m.Proposal(context.Background(), id)
	must(t, err)
	if p.Estimate.MaxCostCents != 80 || len(p.Tasks) != 2 || p.Role != "web_crawler, researcher" || !strings.Contains(p.Text, "2 subagents (parallel") {
		t.Fatalf("group proposal %+v", p)
	}
	d, err := h.m.Decide(context.Background(), id, confirm.Confirmed, confirm.Change{})
	must(t, err)
	if len(d.SubagentIDs) != 2 || d.GroupID == "" {
		t.Fatalf("group decided %+v", d)
	}
	for _, sid := range d.SubagentIDs {
		hd, err := h.m.Get(sid)
		must(t, err)
		wait(t, hd)
	}
}

func TestBadDecisions(t *testing.T) {
	h := confirming(t, "always", nil)
	id := proposed(t, h.callTool(t, "spawn_subagent", subagent.SpawnArgs{Role: "researcher", Task: "dig"}))
	for _, tc := range []struct {
		d confirm.Decision
		c confirm.Change
	}{{"maybe", confirm.Change{}}, {confirm.Modified, confirm.Change{}}, {confirm.Unclear, confirm.Change{}}} {
		if _, err := h.m.Decide(context.Background(), id, tc.d, tc.c); !errors.Is(err, subagent.ErrBadDecision) {
			t.Errorf("Decide(%q, %+v) = %v, want ErrBadDecision", tc.d, tc.c, err)
		}
	}
	if _, err := h.m.Decide(context.Background(), "P-000000", confirm.Confirmed, confirm.Change{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown ID: %v", err)
	}
	if _, err := h.m.Decide(context.Background(), id, confirm.Modified, confirm.Change{MaxIterations: 1_000_000}); !errors.Is(err, subagent.ErrBadDecision) {
		t.Errorf("a change beyond the iteration cap: %v, want ErrBadDecision", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("condition not met in 20 s")
}
