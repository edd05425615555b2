package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/mcpserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script drives the subagents: the task picks the conversation.
const script = `conversations:
  - match: "Begin the task: ASK"
    turns:
      - tool_calls: [{name: ask_user, args: {question: "Which branch?"}}]
      - text: "read {{last_result}}"
  - match: "BLOCKTASK"
    turns:
      - text: "never"
        delay: 1h
  - match: "Begin the task: SHARE"
    turns:
      - tool_calls: [{name: post_finding, args: {text: "shared over MCP"}}]
      - text: "shared"
  - match: "SLOW"
    turns:
      - text: "slow done"
        delay: 1s
  - match: "QUICK"
    turns:
      - text: "quick done {\"output\": {\"answer\": 42}, \"summary\": \"the answer\", \"confidence\": 0.9}"
      - text: "follow-up answered"
  - turns:
      - text: "hello back"
`

type env struct {
	t     *testing.T
	rt    *ava.Runtime
	srv   *mcpserver.Server
	cs    *mcp.ClientSession
	model string

	mu       sync.Mutex
	progress []string
	asked    int
}

type envOptions struct {
	confirm string // AVA_CONFIRM (default never)
	// elicit, when set, answers the server's confirmation questions.
	elicit func(*mcp.ElicitRequest) *mcp.ElicitResult
	// protocol is the MCP protocol version the client asks for (default
	// the SDK's latest).
	protocol string
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "script.yaml")
	model := "scripted/" + path
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	// A role that may ask the person (ask_user).
	if err := os.MkdirAll(filepath.Join(root, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "agents", "asker.md"),
		[]byte("---\nname: asker\ndescription: asks\ntools: [read_file, ask_user]\nmodel: haiku\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o.confirm == "" {
		o.confirm = "never"
	}
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_MODEL": model,
			"AVA_MAX_CONCURRENT_SUBAGENTS": "10", "AVA_CONFIRM": o.confirm}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	// Clients name the script through an alias config.yaml maps to it:
	// only the operator may name a scripted model by its path.
	cfg.Aliases = map[string]map[string]string{"scripted": {"haiku": path, "sonnet": path, "opus": path}}
	log := slog.New(slog.DiscardHandler)
	rt, err := ava.Open(context.Background(), ava.Options{Config: cfg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Runtime: rt, User: "tester", PollEvery: 20 * time.Millisecond,
		ProgressEvery: 100 * time.Millisecond, Logger: log})
	if err != nil {
		rt.Close()
		t.Fatal(err)
	}
	e := &env{t: t, rt: rt, srv: srv, model: model}
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.progress = append(e.progress, r.Params.Message)
	}}
	if o.elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			e.mu.Lock()
			e.asked++
			e.mu.Unlock()
			return o.elicit(r), nil
		}
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "ava-test", Version: "v0"}, opts)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: o.protocol})
	if err != nil {
		cancel()
		<-served
		rt.Close()
		t.Fatal(err)
	}
	e.cs = cs
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
		if err := rt.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

func (e *env) call(ctx context.Context, name string, args map[string]any, progress bool) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if progress {
		p.SetProgressToken("tok-" + name)
	}
	return e.cs.CallTool(ctx, p)
}

func (e *env) mustCall(name string, args map[string]any) *mcp.CallToolResult {
	e.t.Helper()
	res, err := e.call(context.Background(), name, args, false)
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// structured decodes the structured content into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// outputSchema is a tool's output schema as the client sees it.
func (e *env) outputSchema(name string) *jsonschema.Resolved {
	e.t.Helper()
	tools, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name != name {
			continue
		}
		b, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			e.t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			e.t.Fatalf("resolve %s's output schema: %v", name, err)
		}
		return r
	}
	e.t.Fatalf("no tool %s", name)
	return nil
}

// waitStatus waits until the subagent's stored or live status is want.
func (e *env) waitStatus(id string, want lifecycle.Status) {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		sa, err := e.rt.Subagent(context.Background(), id)
		if err == nil && sa.Status == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: status %s (%v), want %s", id, sa.Status, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subagents are the runtime's subagents of the statuses (none: all).
func subagents(t *testing.T, rt *ava.Runtime, status []lifecycle.Status) []ava.Subagent {
	t.Helper()
	list, err := rt.Subagents(context.Background(), ava.SubagentFilter{Status: status})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// active are the runs queued or running; all, every run.
func (e *env) active() []ava.Subagent { return subagents(e.t, e.rt, lifecycle.Active) }
func (e *env) all() []ava.Subagent    { return subagents(e.t, e.rt, nil) }

func TestToolsAndRolesAreListed(t *testing.T) {
	e := newEnv(t, envOptions{})
	tools, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	want := "cancel_subagent list_subagents read_ava_logs send_subagent spawn_subagent spawn_subagents subagent_status"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("tools: %s, want %s", got, want)
	}
	rs, err := e.cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rs.Resources {
		found = found || r.URI == "ava://roles/researcher"
	}
	if !found {
		t.Fatalf("no researcher role among %d resources", len(rs.Resources))
	}
	rr, err := e.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ava://roles/researcher"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "# researcher") || !strings.Contains(rr.Contents[0].Text, "tools: ") {
		t.Errorf("researcher resource: %+v", rr.Contents)
	}
}

func TestSpawnWaitedReturnsStructuredResult(t *testing.T) {
	e := newEnv(t, envOptions{})
	res := e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK sum", "model": "scripted/sonnet"})
	if res.IsError {
		t.Fatalf("error result: %s", text(res))
	}
	if err := e.outputSchema("spawn_subagent").Validate(res.StructuredContent); err != nil {
		t.Fatalf("structured content does not match the output schema: %v\n%v", err, res.StructuredContent)
	}
	var out mcpserver.SpawnResult
	structured(t, res, &out)
	if out.Status != lifecycle.Success || out.Summary != "the answer" || out.OutputFormat != "json" || out.Confidence != 0.9 ||
		string(out.Output) != `{"answer":42}` || !strings.HasPrefix(out.SubagentID, "S-") {
		t.Errorf("result: %+v (output %s)", out, out.Output)
	}
	sa, err := e.rt.Subagent(context.Background(), out.SubagentID)
	if err != nil {
		t.Fatal(err)
	}
	if p := sa.Parent; !strings.HasPrefix(p, mcpserver.SessionPrefix) || len(p) != len(mcpserver.SessionPrefix)+8 {
		t.Errorf("parent session %q, want ava:mcp:<8 hex>", p)
	}
	if !strings.Contains(text(res), `"status": "success"`) && !strings.Contains(text(res), `"status":"success"`) {
		t.Errorf("text content: %s", text(res))
	}
}

func TestWaitedSpawnSendsProgress(t *testing.T) {
	e := newEnv(t, envOptions{})
	res, err := e.call(context.Background(), "spawn_subagent", map[string]any{"role": "researcher", "task": "SLOW one", "model": "scripted/sonnet"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var out mcpserver.SpawnResult
	structured(t, res, &out)
	if out.Status != lifecycle.Success {
		t.Fatalf("result: %+v", out)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.progress) < 3 {
		t.Fatalf("%d progress notifications for a 1 s subagent, want at least 3: %q", len(e.progress), e.progress)
	}
	if !strings.HasPrefix(e.progress[0], out.SubagentID+" researcher") {
		t.Errorf("first notification %q, want the status line of %s", e.progress[0], out.SubagentID)
	}
}

func TestCancellingTheRequestCancelsTheSubagent(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := e.call(ctx, "spawn_subagent", map[string]any{"role": "researcher", "task": "BLOCKTASK forever", "model": "scripted/sonnet"}, true)
		errc <- err
	}()
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for id == "" {
		if hs := e.active(); len(hs) > 0 && hs[0].Status == lifecycle.Running {
			id = hs[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatal("the subagent never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	e.waitStatus(id, lifecycle.Cancelled)
	st := e.mustCall("subagent_status", map[string]any{"subagent_id": id})
	if !strings.Contains(text(st), "cancelled") {
		t.Errorf("subagent_status after the cancel: %s", text(st))
	}
}

func TestListStatusCancelSendLogs(t *testing.T) {
	e := newEnv(t, envOptions{})
	// A background spawn returns at once; list, status and cancel see it.
	res := e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "BLOCKTASK bg", "model": "scripted/sonnet", "background": true})
	var bg mcpserver.SpawnResult
	structured(t, res, &bg)
	if bg.SubagentID == "" || bg.Status.Final() {
		t.Fatalf("background result: %+v", bg)
	}
	e.waitStatus(bg.SubagentID, lifecycle.Running)
	if l := text(e.mustCall("list_subagents", map[string]any{})); !strings.Contains(l, bg.SubagentID) {
		t.Errorf("list_subagents: %s", l)
	}
	if s := text(e.mustCall("subagent_status", map[string]any{"subagent_id": bg.SubagentID})); !strings.Contains(s, "running") {
		t.Errorf("subagent_status: %s", s)
	}
	if c := e.mustCall("cancel_subagent", map[string]any{"subagent_id": bg.SubagentID}); c.IsError || !strings.Contains(text(c), "cancel requested") {
		t.Errorf("cancel_subagent: %s", text(c))
	}
	e.waitStatus(bg.SubagentID, lifecycle.Cancelled)

	// A finished subagent takes a follow-up.
	res = e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK first", "model": "scripted/sonnet"})
	var first mcpserver.SpawnResult
	structured(t, res, &first)
	res = e.mustCall("send_subagent", map[string]any{"subagent_id": first.SubagentID, "message": "and then?"})
	if err := e.outputSchema("send_subagent").Validate(res.StructuredContent); err != nil {
		t.Fatalf("send_subagent's structured content: %v", err)
	}
	var follow mcpserver.SpawnResult
	structured(t, res, &follow)
	if follow.SubagentID != first.SubagentID || follow.Status != lifecycle.Success || !strings.Contains(string(follow.Output), "follow-up answered") {
		t.Errorf("follow-up: %+v (output %s)", follow, follow.Output)
	}
	if l := text(e.mustCall("list_subagents", map[string]any{"all": true})); !strings.Contains(l, first.SubagentID) || !strings.Contains(l, bg.SubagentID) {
		t.Errorf("list_subagents all: %s", l)
	}
	logs := e.mustCall("read_ava_logs", map[string]any{"subagent_id": first.SubagentID})
	if logs.IsError || !strings.Contains(text(logs), "follow-up answered") {
		t.Errorf("read_ava_logs: %s", text(logs))
	}
	if r := e.mustCall("send_subagent", map[string]any{"subagent_id": "S-nope00", "message": "hi"}); !r.IsError {
		t.Errorf("send to an unknown subagent: %s", text(r))
	}
}

func TestSpawnGroup(t *testing.T) {
	e := newEnv(t, envOptions{})
	res := e.mustCall("spawn_subagents", map[string]any{"mode": "parallel", "tasks": []map[string]any{
		{"role": "researcher", "task": "QUICK a", "model": "scripted/sonnet"}, {"role": "researcher", "task": "QUICK b", "model": "scripted/sonnet"}}})
	if err := e.outputSchema("spawn_subagents").Validate(res.StructuredContent); err != nil {
		t.Fatalf("structured content: %v", err)
	}
	var out mcpserver.GroupResult
	structured(t, res, &out)
	if out.Status != "success" || len(out.Results) != 2 || len(out.SubagentIDs) != 2 {
		t.Errorf("group: %+v", out)
	}
}

// TestSpawnGroupCarriesTheBoard: spawn_subagents over MCP returns the
// findings the members posted with the results.
func TestSpawnGroupCarriesTheBoard(t *testing.T) {
	e := newEnv(t, envOptions{})
	res := e.mustCall("spawn_subagents", map[string]any{"mode": "parallel", "tasks": []map[string]any{
		{"role": "researcher", "task": "SHARE a", "model": "scripted/sonnet"}, {"role": "researcher", "task": "QUICK b", "model": "scripted/sonnet"}}})
	if err := e.outputSchema("spawn_subagents").Validate(res.StructuredContent); err != nil {
		t.Fatalf("structured content: %v", err)
	}
	var out mcpserver.GroupResult
	structured(t, res, &out)
	if out.Status != "success" || len(out.Board) != 1 || out.Board[0].Text != "shared over MCP" || out.Board[0].SubagentID != out.Results[0].SubagentID ||
		out.Board[0].GroupID != out.GroupID {
		t.Fatalf("group: %+v", out)
	}
}

func TestConfirmationByElicitation(t *testing.T) {
	e := newEnv(t, envOptions{confirm: "always", elicit: func(r *mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"start": true}}
	}})
	res := e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK asked", "model": "scripted/sonnet"})
	var out mcpserver.SpawnResult
	structured(t, res, &out)
	if out.Status != lifecycle.Success || e.asked != 1 {
		t.Fatalf("confirmed spawn: %+v, asked %d times: %s", out, e.asked, text(res))
	}
}

func TestConfirmationDeclined(t *testing.T) {
	e := newEnv(t, envOptions{confirm: "always", elicit: func(r *mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "decline"}
	}})
	res := e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK asked", "model": "scripted/sonnet"})
	var out mcpserver.SpawnResult
	structured(t, res, &out)
	if out.Status != mcpserver.StatusRejected || out.PendingID == "" || len(e.all()) != 0 {
		t.Fatalf("declined spawn: %+v", out)
	}
}

func TestConfirmationWithoutElicitationStatesThePolicy(t *testing.T) {
	e := newEnv(t, envOptions{confirm: "always"})
	res := e.mustCall("spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK unasked", "model": "scripted/sonnet"})
	if err := e.outputSchema("spawn_subagent").Validate(res.StructuredContent); err != nil {
		t.Fatalf("structured content: %v", err)
	}
	var out mcpserver.SpawnResult
	structured(t, res, &out)
	if out.Status != mcpserver.StatusAwaiting || !strings.HasPrefix(out.PendingID, "P-") || !strings.Contains(out.Note, "AVA_CONFIRM") {
		t.Fatalf("unconfirmed spawn: %+v", out)
	}
	ps, err := e.rt.Proposals(context.Background(), "")
	if err != nil || len(ps) != 1 || ps[0].ID != out.PendingID {
		t.Fatalf("pending proposals %+v, %v", ps, err)
	}
}

func TestCancellingAWaitedGroupCancelsItsMembers(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := e.call(ctx, "spawn_subagents", map[string]any{"mode": "parallel", "tasks": []map[string]any{
			{"role": "researcher", "task": "BLOCKTASK a", "model": "scripted/sonnet"}, {"role": "researcher", "task": "BLOCKTASK b", "model": "scripted/sonnet"}}}, true)
		errc <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(e.active()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the group never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var ids []string
	for _, sa := range e.active() {
		ids = append(ids, sa.ID)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	for _, id := range ids {
		e.waitStatus(id, lifecycle.Cancelled)
	}
}

func TestRefusesNewWorkWhenNotAccepting(t *testing.T) {
	root := t.TempDir()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_CONFIRM": "never"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := ava.Open(context.Background(), ava.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	srv, err := mcpserver.New(mcpserver.Options{Runtime: rt, Accepting: func() error { return errors.New("shutting down") }})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, st) }()
	defer func() { cancel(); <-served }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spawn_subagent", Arguments: map[string]any{"role": "researcher", "task": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "shutting down") || len(subagents(t, rt, nil)) != 0 {
		t.Fatalf("spawn while not accepting: %s", text(res))
	}
}

// TestSubagentQuestionByElicitation: a waited subagent's question is put
// to the MCP client that waits for it (an input request on the latest
// protocol, an elicitation request during the call on older ones), and
// the answer reaches the subagent.
func TestSubagentQuestionByElicitation(t *testing.T) {
	for _, protocol := range []string{"", "2025-06-18"} {
		t.Run("protocol "+cmpOr(protocol, "latest"), func(t *testing.T) {
			e := newEnv(t, envOptions{protocol: protocol, elicit: func(r *mcp.ElicitRequest) *mcp.ElicitResult {
				if !strings.Contains(r.Params.Message, "asks:\nWhich branch?") {
					return &mcp.ElicitResult{Action: "decline"}
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "the main one"}}
			}})
			res := e.mustCall("spawn_subagent", map[string]any{"role": "asker", "task": "ASK me", "model": "scripted/sonnet"})
			var out mcpserver.SpawnResult
			structured(t, res, &out)
			if out.Status != lifecycle.Success || out.Summary != "read The person answered: the main one" || e.asked != 1 {
				t.Fatalf("%+v, asked %d times", out, e.asked)
			}
		})
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestSpawnRefusesAScriptPath: an MCP client may not name a scripted
// model by its path (only the operator may); the call is an error result
// saying so, and nothing starts.
func TestSpawnRefusesAScriptPath(t *testing.T) {
	e := newEnv(t, envOptions{})
	res, err := e.call(context.Background(), "spawn_subagent", map[string]any{"role": "researcher", "task": "QUICK sum", "model": e.model}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "only the operator may name a scripted model") {
		t.Fatalf("spawn on a script path: %s", text(res))
	}
	if n := len(e.all()); n != 0 {
		t.Fatalf("%d subagents started", n)
	}
}
