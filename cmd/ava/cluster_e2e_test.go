package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/postgres"
	"github.com/avaagent/ava/store/postgres/pgtest"
)

// clusterScript: QUICK subagents answer after a short pause; STEPS ones
// read a file and answer ten seconds later (so that a worker killed
// meanwhile leaves a checkpoint); BUSY ones make seven model calls a
// second apart; BLOCK ones wait until stopped.
const clusterScript = `conversations:
  - match: "QUICK"
    turns:
      - text: "quick done"
        delay: 200ms
  - match: "STEPS"
    turns:
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
      - text: "steps done: {{last_result}}"
        delay: 10s
  - match: "STREAM"
    turns:
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - text: "streamed done"
        delay: 1s
  - match: "BUSY"
    turns:
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - tool_calls: [{name: read_file, args: {path: notes.txt}}]
        delay: 1s
      - text: "busy done"
        delay: 1s
  - match: "FOLLOW"
    turns:
      - text: "first answer"
      - text: "answer to the follow-up"
  - match: "ASK"
    turns:
      - tool_calls: [{name: ask_user, args: {question: "Which branch should I read?"}}]
      - text: "done: {{last_result}}"
  - match: "DELEGATE"
    turns:
      - tool_calls: [{name: spawn_subagent, args: {role: researcher, task: "QUICK waited"}}]
      - text: "delegated: {{last_result}}"
  - match: "BLOCK"
    turns:
      - text: "never"
        delay: 1h
  - turns:
      - text: "hello back"
`

// cluster is a PostgreSQL database shared by the processes of a test,
// each with a data root of its own.
type cluster struct {
	t     *testing.T
	url   string
	root  string
	model string
	procs int
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	url := pgtest.URL(t)
	root := t.TempDir()
	script := filepath.Join(root, "script.yaml")
	if err := os.WriteFile(script, []byte(clusterScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, url: url, root: root, model: "scripted/" + script}
}

// start starts a process of the cluster in role (gateway or worker).
func (c *cluster) start(role string, extra ...string) *daemon {
	c.t.Helper()
	c.procs++
	data := filepath.Join(c.root, fmt.Sprintf("data-%s-%d", role, c.procs))
	operatorSubagentScript(c.t, data, strings.TrimPrefix(c.model, "scripted/"))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + c.root,
		"AVA_MODEL=" + c.model, "AVA_CONFIRM=never", "AVA_DATABASE_URL=" + c.url, "AVA_MAX_CONCURRENT_SUBAGENTS=60",
		"AVA_MAX_QUEUED_SUBAGENTS=1000", "AVA_SPAWN_OVERFLOW=queue"}
	return startDaemon(c.t, append(env, extra...), "--role", role)
}

// store opens the cluster's database for the test's own checks.
func (c *cluster) store() *postgres.Store {
	c.t.Helper()
	s, err := postgres.Open(context.Background(), c.url, postgres.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { s.Close() })
	return s
}

// spawnN spawns n subagents through the gateway with tasks kind 0…n-1.
func spawnN(t *testing.T, c *client.Client, model, parent, role, kind string, n int) []job {
	t.Helper()
	var (
		mu   sync.Mutex
		jobs []job
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 16)
	)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sa, _, err := c.Spawn(bg(t), client.SpawnRequest{Role: role, Task: fmt.Sprintf("%s %d", kind, i), Model: spawnModel, Parent: parent})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			jobs = append(jobs, job{sa.ID, role, kind})
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() || len(jobs) != n {
		t.Fatalf("spawned %d of %d", len(jobs), n)
	}
	return jobs
}

// deliveredOnce checks that each job's result reached the parent once.
func deliveredOnce(t *testing.T, st store.Store, parent string, jobs []job) {
	t.Helper()
	// A background result is announced in its own write after the run's
	// end is recorded (which the API shows at once): wait for it.
	var counts map[string]int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		msgs, err := st.Messages(context.Background(), parent, 0)
		if err != nil {
			t.Fatal(err)
		}
		counts = map[string]int{}
		missing := false
		for _, j := range jobs {
			for _, m := range msgs {
				if strings.Contains(m.Text, "Subagent "+j.id+" finished") {
					counts[j.id]++
				}
			}
			missing = missing || counts[j.id] == 0
		}
		if !missing || time.Now().After(deadline) {
			break
		}
	}
	for _, j := range jobs {
		if n := counts[j.id]; n != 1 {
			t.Errorf("%s: the parent got its result %d times", j.id, n)
		}
	}
}

// TestClusterGatewayAndTwoWorkers: one gateway and two worker processes
// on one database; 200 subagents spawned through the gateway all run
// on the workers (both take part), and every run is accounted for: it
// succeeded, its result reached the parent once, and it was run by a
// worker, never by the gateway.
func TestClusterGatewayAndTwoWorkers(t *testing.T) {
	const n = 200
	cl := newCluster(t)
	gw := cl.start("gateway")
	w1, w2 := cl.start("worker"), cl.start("worker")
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "QUICK", n)
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })

	st := cl.store()
	ctx := context.Background()
	pids := map[int]int{}
	instances := map[string]int{}
	for _, d := range []*daemon{w1, w2} {
		pids[d.cmd.Process.Pid] = 0
	}
	all, err := st.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range all {
		instances[in.ID] = in.PID
	}
	// A result is announced in its own write after the run's end, which
	// the API shows at once: wait for the announcements first.
	deliveredOnce(t, st, first.Session, jobs)
	for _, j := range jobs {
		r, err := st.GetRun(ctx, j.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != lifecycle.Success || !r.Announced {
			t.Errorf("%s: %s announced=%v %s", j.id, r.Status, r.Announced, r.Error)
		}
		pid, ok := instances[r.Owner]
		if _, worker := pids[pid]; !ok || !worker {
			t.Errorf("%s was run by %q (pid %d), not by a worker", j.id, r.Owner, pid)
		}
		pids[pid]++
	}
	for pid, runs := range pids {
		if runs == 0 {
			t.Errorf("worker %d ran nothing: %v", pid, pids)
		}
	}
	t.Logf("runs per worker: %v", pids)
}

// TestClusterWorkerKilledRunsResumeElsewhere: a worker killed with
// SIGKILL mid-run: its runs resume on the other worker from their
// checkpoints (the file read is not done again), and each result
// reaches the parent once.
func TestClusterWorkerKilledRunsResumeElsewhere(t *testing.T) {
	const n = 30
	cl := newCluster(t)
	gw := cl.start("gateway", "AVA_RECOVER_EVERY=1s")
	w1 := cl.start("worker", "AVA_RECOVER_EVERY=1s")
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "STEPS", n)
	// Every run is past its first model call on w1 (the only worker so
	// far): the call to read the file is checkpointed (the store's
	// counters, which the gateway shows for a run elsewhere, move at
	// each checkpoint).
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" && sa.Iteration >= 1 })
	w2 := cl.start("worker", "AVA_RECOVER_EVERY=1s")
	killed := time.Now()
	kill(t, w1)
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return lifecycle.Status(sa.Status).Final() })
	t.Logf("worker killed → every run resumed and finished elsewhere in %s", time.Since(killed).Round(time.Millisecond))

	st := cl.store()
	ctx := context.Background()
	all, err := st.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var w2ID string
	for _, in := range all {
		if in.PID == w2.cmd.Process.Pid {
			w2ID = in.ID
		}
	}
	for _, j := range jobs {
		r, err := st.GetRun(ctx, j.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != lifecycle.Success || r.Attempts != 1 || r.Owner != w2ID {
			t.Errorf("%s: %s attempts %d owner %s (w2 %s) %s", j.id, r.Status, r.Attempts, r.Owner, w2ID, r.Error)
		}
		msgs, err := st.Messages(ctx, r.SessionKey, 0)
		if err != nil {
			t.Fatal(err)
		}
		reads := 0
		for _, m := range msgs {
			if strings.Contains(string(m.Blocks), `"read_file"`) && m.Role == store.RoleAssistant {
				reads++
			}
		}
		if reads != 1 {
			t.Errorf("%s: the model asked to read the file %d times, want once (resumed after it)", j.id, reads)
		}
	}
	deliveredOnce(t, st, first.Session, jobs)
	oneStartEach(t, cl, jobs)
}

// oneStartEach checks that each job has one subagent:start entry across
// the session files of every process: a run taken over elsewhere gets
// subagent:resumed there, not a second start.
func oneStartEach(t *testing.T, cl *cluster, jobs []job) {
	t.Helper()
	entries := cl.lifecycleEntries(t)
	for _, j := range jobs {
		var types []string
		starts := 0
		for _, e := range entries[j.id] {
			types = append(types, string(e.EventType))
			if e.EventType == audit.SubagentStart {
				starts++
			}
		}
		if starts != 1 {
			t.Errorf("%s: %d subagent:start entries across the processes' session files: %v", j.id, starts, types)
		}
	}
}

// TestClusterCancelAcrossProcesses: a subagent spawned through the
// gateway and running on a worker is stopped through the gateway; the
// worker stops it at once, and a queued one no worker took is cancelled
// too.
func TestClusterCancelAcrossProcesses(t *testing.T) {
	cl := newCluster(t)
	gw := cl.start("gateway")
	cl.start("worker")
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "BLOCK", 3)
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" })
	for _, j := range jobs {
		asked := time.Now()
		if _, err := gw.c.Stop(bg(t), store.SubagentSessionPrefix+j.id); err != nil {
			t.Fatal(err)
		}
		waitAll(t, gw.c, []job{j}, func(sa client.Subagent) bool { return sa.Status == "cancelled" })
		t.Logf("%s cancelled on its worker %s after the request", j.id, time.Since(asked).Round(time.Millisecond))
	}
	st := cl.store()
	for _, j := range jobs {
		r, err := st.GetRun(context.Background(), j.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != lifecycle.Cancelled || r.Owner == store.OwnerQueue {
			t.Errorf("%s: %s owner %q", j.id, r.Status, r.Owner)
		}
	}
}

// TestClusterStreamAcrossReplicas: a subagent spawned through one
// gateway runs on a worker; its stream is read live from a second
// gateway, then, after a disconnect, from the first one from where it
// stopped: every kept event arrives once, in order, with no gap, and
// the first part arrives while the run is still going (live, not a
// replay at the end).
func TestClusterStreamAcrossReplicas(t *testing.T) {
	cl := newCluster(t)
	g1, g2 := cl.start("gateway"), cl.start("gateway")
	cl.start("worker")
	first := chatText(t, g1.c, client.ChatRequest{Message: "hello"})
	j := spawnN(t, g1.c, cl.model, first.Session, "researcher", "STREAM", 1)[0]
	key := store.SubagentSessionPrefix + j.id

	var seqs []uint64
	read := func(c *client.Client, after uint64, until func(client.Event) bool) {
		t.Helper()
		st, err := c.Stream(bg(t), key, after)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for {
			ev, err := st.Next()
			if err != nil {
				t.Fatalf("stream of %s after #%d: %v (read %v)", key, after, err, seqs)
			}
			if ev.ID > 0 {
				seqs = append(seqs, ev.ID)
			}
			if until(ev) {
				return
			}
		}
	}
	// From the second gateway: until the first tool result, which the
	// worker publishes a second or more before the run ends.
	read(g2.c, 0, func(ev client.Event) bool { return ev.Type == "ToolResult" })
	sa, err := g2.c.Subagent(bg(t), j.id)
	if err != nil {
		t.Fatal(err)
	}
	if lifecycle.Status(sa.Status).Final() {
		t.Fatalf("the run had ended (%s) before the second gateway streamed its first tool result: not live", sa.Status)
	}
	// Reconnect to the first gateway from the last number seen, to the
	// end of the run.
	read(g1.c, seqs[len(seqs)-1], func(ev client.Event) bool { return ev.Type == "SessionEnd" })
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("sequence numbers across the two gateways: %v, want 1…%d without gap or duplicate", seqs, len(seqs))
		}
	}
	t.Logf("%d events of %s read from two gateways while it ran on a worker", len(seqs), j.id)
}

// TestClusterWorkerDrainHandsOver: SIGTERM drains a worker: it stops
// taking jobs, and once its grace is over its resumable runs are
// checkpointed and taken over by the other worker at once (its instance
// is removed, which the others hear), while it exits 0.
func TestClusterWorkerDrainHandsOver(t *testing.T) {
	const n = 10
	cl := newCluster(t)
	gw := cl.start("gateway")
	w1 := cl.start("worker", "AVA_SHUTDOWN_GRACE=1s")
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "STEPS", n)
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" && sa.Iteration >= 1 })
	w2 := cl.start("worker")
	drained := time.Now()
	if err := w1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w1.exitCode(t); code != 0 {
		t.Fatalf("drained worker exit %d\n%s", code, w1.stderr)
	}
	st := cl.store()
	ctx := context.Background()
	var w2ID string
	all, err := st.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range all {
		if in.PID == w2.cmd.Process.Pid {
			w2ID = in.ID
		}
	}
	// Taken over without waiting for the periodic sweep (10 s).
	for _, j := range jobs {
		for {
			r, err := st.GetRun(ctx, j.id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Owner == w2ID && r.Attempts == 1 {
				break
			}
			if time.Since(drained) > 60*time.Second {
				t.Fatalf("%s not taken over: owner %s attempts %d status %s", j.id, r.Owner, r.Attempts, r.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("SIGTERM → every run taken over by the other worker in %s", time.Since(drained).Round(time.Millisecond))
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "success" })
	deliveredOnce(t, st, first.Session, jobs)
	oneStartEach(t, cl, jobs)
}

// TestClusterBudgetAcrossGateways: a session's budget holds across the
// gateways of a cluster: what a run spawned through one gateway may
// still spend is committed when another gateway spawns for the same
// session, and the worker applies the cap each run was given.
func TestClusterBudgetAcrossGateways(t *testing.T) {
	cl := newCluster(t)
	g1, g2 := cl.start("gateway"), cl.start("gateway")
	cl.start("worker")
	first := chatText(t, g1.c, client.ChatRequest{Message: "hello"})
	st := cl.store()
	ctx := context.Background()
	if err := st.SetSessionBudget(ctx, first.Session, 1.0); err != nil {
		t.Fatal(err)
	}
	spawn := func(c *client.Client, task string) (client.Subagent, error) {
		sa, _, err := c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: task, Model: spawnModel, MaxCostCents: 0.8, Parent: first.Session})
		return sa, err
	}
	a, err := spawn(g1.c, "BLOCK a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := spawn(g2.c, "BLOCK b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spawn(g2.c, "BLOCK c"); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("a third spawn past the budget: %v, want a budget refusal", err)
	}
	jobs := []job{{a.ID, "researcher", "BLOCK"}, {b.ID, "researcher", "BLOCK"}}
	waitAll(t, g1.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" })
	for id, want := range map[string]float64{a.ID: 0.8, b.ID: 0.2} {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			MaxCostCents float64 `json:"max_cost_cents"`
		}
		if err := json.Unmarshal(r.Config, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.MaxCostCents < want-1e-9 || cfg.MaxCostCents > want+1e-9 {
			t.Errorf("%s: cap %v, want %v", id, cfg.MaxCostCents, want)
		}
	}
	for _, j := range jobs {
		if _, err := g2.c.Stop(bg(t), store.SubagentSessionPrefix+j.id); err != nil {
			t.Fatal(err)
		}
	}
	waitAll(t, g1.c, jobs, func(sa client.Subagent) bool { return sa.Status == "cancelled" })
}

// TestClusterFollowUpAndAllInOne: one process in role all (ava serve
// on PostgreSQL) runs what it spawns itself through the job queue; a
// follow-up to a finished subagent, sent through a gateway, runs as a
// job on that process with its conversation, and its answer comes back.
func TestClusterFollowUpAndAllInOne(t *testing.T) {
	cl := newCluster(t)
	all := cl.start("all")
	gw := cl.start("gateway")
	first := chatText(t, all.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, all.c, cl.model, first.Session, "researcher", "FOLLOW", 3)
	waitAll(t, all.c, jobs, func(sa client.Subagent) bool { return sa.Status == "success" })
	j := jobs[0]
	res := chatText(t, gw.c, client.ChatRequest{SessionKey: store.SubagentSessionPrefix + j.id, Message: "and the second part?"})
	if !strings.Contains(res.Text, "answer to the follow-up") {
		t.Fatalf("follow-up answer %+v", res)
	}
	st := cl.store()
	msgs, err := st.Messages(context.Background(), store.SubagentSessionPrefix+j.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Role+": "+m.Text)
	}
	joined := strings.Join(texts, "\n")
	if !strings.Contains(joined, "first answer") || !strings.Contains(joined, "and the second part?") ||
		strings.Count(joined, "and the second part?") != 1 {
		t.Fatalf("conversation after the follow-up:\n%s", joined)
	}
}

// TestClusterAnswerAcrossProcesses: a subagent on a worker asks the
// person (ask_user); the question reaches the parent session's stream on
// the gateway, and the answer given to the gateway reaches the run on
// the worker, which goes on with it.
func TestClusterAnswerAcrossProcesses(t *testing.T) {
	cl := newCluster(t)
	roles := filepath.Join(cl.root, ".ava", "agents")
	if err := os.MkdirAll(roles, 0o700); err != nil {
		t.Fatal(err)
	}
	role := "---\nname: asker\ndescription: asks the person\ntools: [read_file, ask_user]\n---\nAsk when unsure.\n"
	if err := os.WriteFile(filepath.Join(roles, "asker.md"), []byte(role), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := cl.start("gateway")
	cl.start("worker")
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	st, err := gw.c.Stream(bg(t), first.Session, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := spawnN(t, gw.c, cl.model, first.Session, "asker", "ASK", 1)[0]
	var qid string
	for qid == "" {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != "UserQuestion" {
			continue
		}
		var se client.SessionEvent
		var q struct {
			QuestionID string `json:"questionId"`
		}
		if err := json.Unmarshal(ev.Data, &se); err != nil || json.Unmarshal(se.Content, &q) != nil {
			t.Fatalf("question event %s", ev.Data)
		}
		qid = q.QuestionID
	}
	if _, err := gw.c.Answer(bg(t), "Q-nothere", client.AnswerRequest{Answer: "x", SessionKey: first.Session}); err == nil {
		t.Fatal("an answer to a question nobody asked was taken")
	}
	got, err := gw.c.Answer(bg(t), qid, client.AnswerRequest{Answer: "the main branch", SessionKey: first.Session})
	if err != nil {
		t.Fatal(err)
	}
	if got.SubagentID != j.id {
		t.Errorf("answered question of %q, want %s", got.SubagentID, j.id)
	}
	waitAll(t, gw.c, []job{j}, func(sa client.Subagent) bool { return sa.Status == "success" })
	sa, err := gw.c.Subagent(bg(t), j.id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sa.Result), "the main branch") {
		t.Errorf("result %s does not carry the answer", sa.Result)
	}
}

// TestClusterWaitedSpawnDeliveredOnce: a spawn the orchestrator waits
// for runs on a worker; its result comes back as the tool's result and
// is not also announced into the parent's history.
func TestClusterWaitedSpawnDeliveredOnce(t *testing.T) {
	cl := newCluster(t)
	gw := cl.start("gateway")
	cl.start("worker")
	res := chatText(t, gw.c, client.ChatRequest{Message: "DELEGATE please"})
	if !strings.Contains(res.Text, "delegated:") {
		t.Fatalf("answer %q", res.Text)
	}
	st := cl.store()
	ctx := context.Background()
	runs, err := st.ListRuns(ctx, store.RunFilter{ParentSession: res.Session})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	if r := runs[0]; r.Status != lifecycle.Success || !r.Announced {
		t.Errorf("%s: %s announced=%v", r.ShortID, r.Status, r.Announced)
	}
	msgs, err := st.Messages(ctx, res.Session, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Role == store.RoleSubagent {
			t.Errorf("the waited result was also announced: %q", m.Text)
		}
	}
}

// TestClusterStopThenFollowUp: a follow-up right after a stop runs; the
// stop is not applied again to the next turn.
func TestClusterStopThenFollowUp(t *testing.T) {
	cl := newCluster(t)
	gw := cl.start("gateway")
	cl.start("worker")
	cl.start("worker")
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	jobs := spawnN(t, gw.c, cl.model, first.Session, "researcher", "BLOCK", 4)
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" })
	for _, j := range jobs {
		if _, err := gw.c.Stop(bg(t), store.SubagentSessionPrefix+j.id); err != nil {
			t.Fatal(err)
		}
	}
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "cancelled" })
	for _, j := range jobs {
		s, err := gw.c.Chat(bg(t), client.ChatRequest{SessionKey: store.SubagentSessionPrefix + j.id, Message: "BLOCK again please"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" })
	time.Sleep(time.Second) // a stale stop would have struck by now
	waitAll(t, gw.c, jobs, func(sa client.Subagent) bool { return sa.Status == "running" })
}

// TestClusterKilledWorkerJobsWaitingForRoom: jobs a worker held while
// the cluster was full, when it is killed, go back to the queue (River
// rescues them) and their runs run once there is room.
func TestClusterKilledWorkerJobsWaitingForRoom(t *testing.T) {
	cl := newCluster(t)
	gw := cl.start("gateway")
	w1 := cl.start("worker", "AVA_MAX_CONCURRENT_SUBAGENTS=2", "AVA_RECOVER_EVERY=1s")
	cl.start("worker", "AVA_MAX_CONCURRENT_SUBAGENTS=2", "AVA_RECOVER_EVERY=1s")
	first := chatText(t, gw.c, client.ChatRequest{Message: "hello"})
	block := spawnN(t, gw.c, cl.model, first.Session, "code_reviewer", "BLOCK", 2)
	waitAll(t, gw.c, block, func(sa client.Subagent) bool { return sa.Status == "running" })
	quick := spawnN(t, gw.c, cl.model, first.Session, "researcher", "QUICK", 4)
	time.Sleep(time.Second) // both workers hold jobs waiting for room
	kill(t, w1)
	for _, j := range block {
		if _, err := gw.c.Stop(bg(t), store.SubagentSessionPrefix+j.id); err != nil {
			t.Fatal(err)
		}
	}
	waitAll(t, gw.c, quick, func(sa client.Subagent) bool { return sa.Status == "success" })
}
