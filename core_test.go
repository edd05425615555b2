package ava_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm"
)

// openTest opens a runtime over the script for a test, closed with it.
func openTest(t *testing.T, script string, edit ...func(*config.Config)) *ava.Runtime {
	t.Helper()
	cfg := exampleConfig(script)
	for _, e := range edit {
		e(&cfg)
	}
	rt, err := ava.Open(context.Background(), ava.Options{Config: cfg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestKindOfClassifiesEveryCoreError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want ava.Kind
	}{
		{fmt.Errorf("x: %w", ava.ErrNotFound), ava.NotFound},
		{fmt.Errorf("x: %w", ava.ErrBusy), ava.Busy},
		{fmt.Errorf("x: %w", ava.ErrForbidden), ava.Forbidden},
		{fmt.Errorf("x: %w", ava.ErrInvalid), ava.Invalid},
		{fmt.Errorf("x: %w", ava.ErrUnclear), ava.Unclear},
		{fmt.Errorf("x: %w", ava.ErrDecided), ava.Conflict},
		{fmt.Errorf("x: %w", ava.ErrExpired), ava.Conflict},
		{fmt.Errorf("x: %w", ava.ErrLimit), ava.Limit},
		{fmt.Errorf("x: %w", ava.ErrBudget), ava.Budget},
		{fmt.Errorf("x: %w", ava.ErrDiskFull), ava.Full},
		{fmt.Errorf("x: %w", ava.ErrReadOnly), ava.Unavailable},
		{errors.New("anything else"), ava.Internal},
	} {
		if got := ava.KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if err := ava.CheckSessionKey("ava:subagent:S-"); ava.KindOf(err) != ava.Invalid {
		t.Errorf("a subagent key without its ID: %v, want Invalid", err)
	}
}

func TestReadOnlyRuntimeRefusesWork(t *testing.T) {
	ctx := testCtx(t)
	cfg := exampleConfig("turns:\n  - text: hi\n")
	rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: quiet, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.Send(ctx, "ava:test:x", "hi", ava.SendOptions{}); !errors.Is(err, ava.ErrReadOnly) {
		t.Fatalf("Send on a read-only runtime: %v", err)
	}
	if _, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "x"}}); !errors.Is(err, ava.ErrReadOnly) {
		t.Fatalf("Spawn on a read-only runtime: %v", err)
	}
	if len(rt.Roles()) == 0 {
		t.Fatal("a read-only runtime still lists the roles")
	}
}

// A secret a subagent read never leaves through the core: its result,
// live and as stored, is masked.
func TestCoreMasksWhatItReturns(t *testing.T) {
	ctx := testCtx(t)
	const secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	rt := openTest(t, "turns:\n  - text: \"the token is "+secret+"\"\n")
	spawned, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "find " + secret}})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := rt.Wait(ctx, spawned.Subagent.ID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := rt.Subagents(ctx, ava.SubagentFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("Subagents: %v %v", list, err)
	}
	for _, v := range []ava.Subagent{*spawned.Subagent, sa, list[0]} {
		text := fmt.Sprintf("%+v", v)
		if v.Result != nil {
			text += v.Result.Summary
		}
		if strings.Contains(text, secret) {
			t.Fatalf("the secret left the core: %s", text)
		}
	}
	if sa.Result == nil || !strings.Contains(sa.Result.Summary, "the token is") {
		t.Fatalf("result: %+v", sa.Result)
	}
}

// A chat decides only its own session's proposals.
func TestDecideWithinASessionOnlyItsOwn(t *testing.T) {
	ctx := testCtx(t)
	rt := openTest(t, "turns:\n  - text: done\n", func(c *config.Config) { c.Confirm = "always" })
	a, err := rt.NewSession(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	spawned, err := rt.Spawn(ctx, ava.SpawnRequest{Parent: a, Config: ava.SubagentConfig{Role: "researcher", Task: "x"}})
	if err != nil || spawned.Proposal == nil {
		t.Fatalf("spawn with confirm always: %+v %v", spawned, err)
	}
	id := spawned.Proposal.ID
	if _, err := rt.Decide(ctx, "ava:test:other", id, ava.Confirmed, ava.Change{}); !errors.Is(err, ava.ErrNotFound) {
		t.Fatalf("another session's proposal: %v, want ErrNotFound", err)
	}
	if _, err := rt.DecideWords(ctx, a, id, "hmm, maybe"); ava.KindOf(err) != ava.Unclear {
		t.Fatalf("unclear words: %v", err)
	}
	d, err := rt.DecideWords(ctx, a, id, "yes")
	if err != nil || len(d.SubagentIDs) != 1 {
		t.Fatalf("yes in its own session: %+v %v", d, err)
	}
	if _, err := rt.Decide(ctx, a, id, ava.Confirmed, ava.Change{}); ava.KindOf(err) != ava.Conflict {
		t.Fatalf("deciding twice: %v, want Conflict", err)
	}
	if _, err := rt.Wait(ctx, d.SubagentIDs[0]); err != nil {
		t.Fatal(err)
	}
}

// A program without a provider is told so where it asks, as `ava chat`
// and `ava spawn` are: Send and Spawn return ErrNoModel at once (not a
// turn that fails later, nor a subagent silently on the offline model),
// and Offline opts in to the offline model.
func TestNoProviderIsErrNoModelUntilOffline(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": filepath.Join(dir, "data"), "AVA_WORKSPACE": dir, "AVA_CONFIRM": "never"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	open := func(cfg config.Config) *ava.Runtime {
		rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		return rt
	}
	rt := open(cfg)
	if _, err := rt.Send(ctx, "ava:test:a", "hi", ava.SendOptions{}); !errors.Is(err, ava.ErrNoModel) || ava.KindOf(err) != ava.Unavailable {
		t.Fatalf("Send without a provider: %v, want ErrNoModel (Unavailable)", err)
	}
	req := ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "x"}}
	if _, err := rt.Spawn(ctx, req); !errors.Is(err, ava.ErrNoModel) {
		t.Fatalf("Spawn without a provider: %v, want ErrNoModel", err)
	}
	group := ava.GroupRequest{Mode: "parallel", Configs: []ava.SubagentConfig{req.Config, req.Config}}
	if _, err := rt.SpawnGroup(ctx, "", group, "", ""); !errors.Is(err, ava.ErrNoModel) {
		t.Fatalf("SpawnGroup without a provider: %v, want ErrNoModel", err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	cfg, offline := ava.Offline(cfg)
	if !offline {
		t.Fatal("Offline: no provider, yet not offline")
	}
	rt = open(cfg)
	s, err := rt.Spawn(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := rt.Wait(ctx, s.Subagent.ID)
	if err != nil || sa.Status != "success" || !ava.IsOffline(sa.Model) {
		t.Fatalf("offline spawn: %v %v", sa, err)
	}
}

// SpawnGroup returns the running group (or a proposal), like Spawn; a
// conversation to fork is refused, as for Spawn.
func TestSpawnGroupReturnsTheGroup(t *testing.T) {
	ctx := testCtx(t)
	rt := openTest(t, "turns:\n  - text: done\n")
	c := ava.SubagentConfig{Role: "researcher", Task: "x"}
	sp, err := rt.SpawnGroup(ctx, "", ava.GroupRequest{Mode: "parallel", Configs: []ava.SubagentConfig{c, c}}, "", "")
	if err != nil || sp.Group == nil || sp.Proposal != nil {
		t.Fatalf("SpawnGroup: %+v %v", sp, err)
	}
	rs, err := sp.Group.Wait(ctx)
	if err != nil || len(rs) != 2 || len(sp.Group.Members()) != 2 {
		t.Fatalf("group results: %+v %v", rs, err)
	}
	fork := ava.GroupRequest{Mode: "parallel", Configs: []ava.SubagentConfig{c}, Fork: make([]llm.Message, 1)}
	if _, err := rt.SpawnGroup(ctx, "", fork, "", ""); !errors.Is(err, ava.ErrInvalid) {
		t.Fatalf("a group with a conversation to fork: %v, want ErrInvalid", err)
	}
}

// NewSession makes a key a new session may have, or says why not: the
// key of a malformed channel is refused, not stored.
func TestNewSessionRefusesAMalformedChannel(t *testing.T) {
	ctx := testCtx(t)
	rt := openTest(t, "turns:\n  - text: hi\n")
	for _, ch := range []string{"", "Web", "a b"} {
		if key, err := rt.NewSession(ctx, ch); !errors.Is(err, ava.ErrBadKey) || ava.KindOf(err) != ava.Invalid {
			t.Errorf("NewSession(%q) = %q, %v; want ErrBadKey", ch, key, err)
		}
	}
	key, err := rt.NewSession(ctx, "web")
	if err != nil || !strings.HasPrefix(key, "ava:web:") {
		t.Fatalf("NewSession(web) = %q, %v", key, err)
	}
	if _, err := rt.Session(ctx, key); err != nil {
		t.Fatalf("the new session: %v", err)
	}
}

// Send creates a new main session under a key of the grammar, and
// refuses one outside it, as POST /api/chat does.
func TestSendCreatesASessionUnderAGoodKeyOnly(t *testing.T) {
	ctx := testCtx(t)
	rt := openTest(t, "turns:\n  - text: hi\n")
	for _, key := range []string{"mine", "ava:web:", "ava:subagent:x"} {
		if _, err := rt.Send(ctx, key, "hi", ava.SendOptions{}); ava.KindOf(err) != ava.Invalid && ava.KindOf(err) != ava.NotFound {
			t.Errorf("Send(%q): %v, want a refusal", key, err)
		}
	}
	turn, err := rt.Send(ctx, "ava:myapp:ann", "hi", ava.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := turn.Wait(ctx); err != nil || res.Text != "hi" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	if _, err := rt.Session(ctx, "ava:myapp:ann"); err != nil {
		t.Fatalf("the session its first message created: %v", err)
	}
}

// Open without a data root says where one comes from (it said "create
// data root : mkdir : no such file or directory").
func TestOpenWithoutADataRootSaysWhatToDo(t *testing.T) {
	rt, err := ava.Open(testCtx(t), ava.Options{Logger: quiet})
	if rt != nil || !errors.Is(err, ava.ErrInvalid) || !strings.Contains(err.Error(), "config.Load") {
		t.Fatalf("Open(Options{}) = %v, %v", rt, err)
	}
}

// FollowUp is Send to the subagent's key: one path, the figures over
// both turns, and Send's errors.
func TestFollowUpIsSendToTheSubagent(t *testing.T) {
	ctx := testCtx(t)
	rt := openTest(t, "turns:\n  - text: first\n  - text: second\n")
	s, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Wait(ctx, s.Subagent.ID); err != nil {
		t.Fatal(err)
	}
	sa, err := rt.FollowUp(ctx, s.Subagent.ID[:5], "and then?", false, false)
	if err != nil || sa.ID != s.Subagent.ID {
		t.Fatalf("FollowUp by a prefix: %v %v", sa, err)
	}
	sa, err = rt.Wait(ctx, sa.ID)
	if err != nil || sa.Status != "success" || sa.Iterations != 2 {
		t.Fatalf("after the follow-up: %v (iterations %d) %v", sa, sa.Iterations, err)
	}
	if _, err := rt.FollowUp(ctx, " ", "x", false, false); !errors.Is(err, ava.ErrInvalid) {
		t.Fatalf("FollowUp without an ID: %v", err)
	}
	if _, err := rt.FollowUp(ctx, "S-000000", "x", false, false); !errors.Is(err, ava.ErrNotFound) {
		t.Fatalf("FollowUp to no subagent: %v", err)
	}
}

// A Subagent encoded as JSON (a program serving its own API) keeps
// every figure, the times too.
func TestSubagentJSONKeepsEveryFigure(t *testing.T) {
	b, err := json.Marshal(ava.Subagent{ID: "S-1", Figures: ava.Figures{Iterations: 2, Tokens: 3, CostCents: 0.5,
		Elapsed: 1500 * time.Millisecond, Wall: 4 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var back ava.Subagent
	if err := json.Unmarshal(b, &back); err != nil || back.Figures != (ava.Figures{Iterations: 2, Tokens: 3, CostCents: 0.5,
		Elapsed: 1500 * time.Millisecond, Wall: 4 * time.Second}) {
		t.Fatalf("round trip of %s: %+v %v", b, back.Figures, err)
	}
}

// A proposal keeps who named its model: the operator's scripted model
// (`ava spawn --model scripted/…`) still starts when the proposal is read
// back from the store and confirmed; a model the person names in a
// change is theirs, not the operator's.
func TestProposalKeepsTheOperatorsModel(t *testing.T) {
	ctx := testCtx(t)
	rt := openTest(t, "turns:\n  - text: done\n", func(c *config.Config) { c.Confirm = "always" })
	model := rt.Config().Model // scripted/<path>, named by the operator
	key, err := rt.NewSession(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg := ava.SubagentConfig{Role: "researcher", Task: "x", Model: model, ModelBy: llm.NamedByOperator}
	spawned, err := rt.Spawn(ctx, ava.SpawnRequest{Parent: key, Config: cfg})
	if err != nil || spawned.Proposal == nil {
		t.Fatalf("propose: %+v %v", spawned, err)
	}
	d, err := rt.Decide(ctx, key, spawned.Proposal.ID, ava.Confirmed, ava.Change{})
	if err != nil {
		t.Fatalf("confirm the operator's scripted model: %v", err)
	}
	if sa, err := rt.Wait(ctx, d.SubagentIDs[0]); err != nil || sa.Status != "success" {
		t.Fatalf("run: %+v %v", sa, err)
	}
	again, err := rt.Spawn(ctx, ava.SpawnRequest{Parent: key, Config: cfg})
	if err != nil || again.Proposal == nil {
		t.Fatalf("propose again: %+v %v", again, err)
	}
	if _, err := rt.Decide(ctx, key, again.Proposal.ID, ava.Modified, ava.Change{Model: model}); !errors.Is(err, llm.ErrOperatorOnlyModel) {
		t.Fatalf("a change naming a scripted model: %v, want ErrOperatorOnlyModel", err)
	}
}
