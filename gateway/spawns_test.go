package gateway_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/avaagent/ava/gateway/client"
)

// confirmScript: the orchestrator spawns, then tries to confirm its own
// proposal with a tool that does not exist, then spawns again.
const confirmScript = `conversations:
  - match: "specialized .* subagent"
    turns:
      - text: "subagent answer"
  - turns:
      - tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: "look around", model: "MODEL", rationale: "many pages"}
      - tool_calls:
          - name: confirm_spawn
            args: {pending_id: "P-000000", decision: "yes"}
          - name: spawn_subagent
            args: {role: researcher, task: "look around", model: "MODEL"}
      - text: "waiting for you"
`

func pendingOf(t *testing.T, e *env, key string) []client.Proposal {
	t.Helper()
	ps, err := e.c.Proposals(ctx(t), key)
	must(t, err)
	return ps
}

// TestSpawnConfirmationOverTheAPI: the model's spawns become proposals
// it cannot confirm; the person lists, confirms and rejects them through
// the API, which refuses unknown IDs (404), second decisions (409) and bad
// decisions (400), and asks again on an unclear answer (422).
func TestSpawnConfirmationOverTheAPI(t *testing.T) {
	e := newEnv(t, envOptions{script: confirmScript, confirm: "always"})
	start, evs, res := e.chat(client.ChatRequest{Message: "research this"})
	if res.Status != "success" || res.Text != "waiting for you" {
		t.Fatalf("turn %+v", res)
	}
	var proposedEvents int
	for _, ev := range evs {
		if ev.Type == "SpawnProposed" {
			proposedEvents++
		}
	}
	ps := pendingOf(t, e, start.SessionKey)
	if len(ps) != 2 || proposedEvents != 2 {
		t.Fatalf("%d proposals, %d SpawnProposed events; want 2 and 2", len(ps), proposedEvents)
	}
	if p := ps[0]; p.Role != "researcher" || p.Rationale != "many pages" || p.Estimate.MaxCostCents <= 0 ||
		!strings.Contains(p.Text, "Proceed? [Yes/No]") || p.Status != "pending" {
		t.Fatalf("proposal %+v", p)
	}
	subs, err := e.c.Subagents(ctx(t), client.SubagentFilter{})
	must(t, err)
	if len(subs) != 0 {
		t.Fatalf("the model started %d subagents without the person", len(subs))
	}

	code, body := e.do("POST", "/api/spawns/P-ffffff/confirm", `{"decision":"yes"}`, nil)
	wantError(t, code, body, http.StatusNotFound, "P-ffffff")
	code, body = e.do("POST", "/api/spawns/"+ps[0].ID+"/confirm", `{"decision":"perhaps"}`, nil)
	wantError(t, code, body, http.StatusBadRequest, "want yes, no or modify")
	code, body = e.do("POST", "/api/spawns/"+ps[0].ID+"/confirm", `{"decision":"modify"}`, nil)
	wantError(t, code, body, http.StatusBadRequest, "needs a config")
	code, body = e.do("POST", "/api/spawns/"+ps[0].ID+"/confirm", `{"answer":"hmm, not sure"}`, nil)
	wantError(t, code, body, http.StatusUnprocessableEntity, "Answer yes, no")

	d, err := e.c.Confirm(ctx(t), ps[0].ID, client.ConfirmRequest{Decision: client.DecisionModify, Config: &client.Change{MaxCostCents: 20}})
	must(t, err)
	if d.Decision != "confirmed" || len(d.SubagentIDs) != 1 || d.Change != "max cost $0.20" {
		t.Fatalf("confirmed %+v", d)
	}
	_, err = e.c.Confirm(ctx(t), ps[0].ID, client.ConfirmRequest{Decision: client.DecisionNo})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict {
		t.Fatalf("second decision: %v, want 409", err)
	}
	d, err = e.c.Confirm(ctx(t), ps[1].ID, client.ConfirmRequest{Answer: "no thanks"})
	must(t, err)
	if d.Decision != "rejected" || len(pendingOf(t, e, "")) != 0 {
		t.Fatalf("rejected %+v", d)
	}
	sa, err := e.c.Subagent(ctx(t), d.Proposal.ID)
	if err == nil {
		t.Fatalf("a rejected proposal is a subagent: %+v", sa)
	}
	code, body = e.do("GET", "/api/spawns?status=done", "", nil)
	wantError(t, code, body, http.StatusBadRequest, "only pending")
}

// TestAPISpawnIsProposed: POST /api/subagents under the policy answers
// 202 with the proposal and starts nothing.
func TestAPISpawnIsProposed(t *testing.T) {
	e := newEnv(t, envOptions{confirm: "above:10"})
	sa, p, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "researcher", Task: "quick", Model: spawnModel, Rationale: "r"})
	must(t, err)
	if p == nil || sa.ID != "" || !strings.HasPrefix(p.ID, "P-") || p.SessionKey == "" {
		t.Fatalf("spawn answered %+v, %+v", sa, p)
	}
	code, body := e.do("POST", "/api/subagents", `{"role":"researcher","task":"cheap","maxCostCents":5,"model":"`+spawnModel+`"}`, nil)
	if code != http.StatusCreated {
		t.Fatalf("a 5¢ spawn under above:10: %d %s", code, body)
	}
}

// TestChatAnswersAProposal: while proposals await the person, a chat
// message is the answer: with two pending a change or an unclear answer
// asks which; an
// unclear answer is asked again; "P-… yes but use …" confirms with the
// change; "no thanks" rejects the last one.
func TestChatAnswersAProposal(t *testing.T) {
	e := newEnv(t, envOptions{script: confirmScript, confirm: "always"})
	start, _, _ := e.chat(client.ChatRequest{Message: "research this"})
	key := start.SessionKey
	ps := pendingOf(t, e, key)
	if len(ps) != 2 {
		t.Fatalf("%d proposals", len(ps))
	}
	say := func(msg string) string {
		t.Helper()
		_, _, res := e.chat(client.ChatRequest{SessionKey: key, Message: msg})
		if res.Status != "success" {
			t.Fatalf("%q: %+v", msg, res)
		}
		return res.Text
	}
	for _, msg := range []string{"hmm", "use haiku", "yes to P-ffffff"} {
		if got := say(msg); !strings.Contains(got, "2 spawns await your answer") || !strings.Contains(got, ps[1].ID) {
			t.Fatalf("%q with two pending: %q", msg, got)
		}
	}
	if got := say(ps[0].ID + " hmm"); !strings.Contains(got, "could not tell") {
		t.Fatalf("unclear: %q", got)
	}
	if len(pendingOf(t, e, key)) != 2 {
		t.Fatal("an unclear answer decided something")
	}
	got := say(ps[0].ID + " yes but max $0.20")
	if !strings.HasPrefix(got, "🚀 Spawning researcher subagent (S-") || !strings.Contains(got, "with max cost $0.20") {
		t.Fatalf("confirmed: %q", got)
	}
	if got := say("no thanks"); got != "OK, not spawning researcher ("+ps[1].ID+")." {
		t.Fatalf("rejected: %q", got)
	}
	if n := len(pendingOf(t, e, key)); n != 0 {
		t.Fatalf("%d still pending", n)
	}
}

// TestChatYesAnswersTheTurnsProposals: after a turn proposed two spawns,
// "yes" in the chat starts both, "no" rejects both, and "yes to P-…" or
// "no to P-…" answers only the one it names.
func TestChatYesAnswersTheTurnsProposals(t *testing.T) {
	t.Run("yes starts all", func(t *testing.T) {
		e, key, _ := proposeTwo(t)
		got := sayIn(t, e, key, "yes")
		for _, want := range []string{"🚀 Spawning researcher subagent (S-", "\n🚀 Spawning researcher subagent (S-"} {
			if !strings.Contains(got, want) {
				t.Fatalf("yes: %q", got)
			}
		}
		if n := len(pendingOf(t, e, key)); n != 0 {
			t.Fatalf("%d still pending after yes", n)
		}
		subs, err := e.c.Subagents(ctx(t), client.SubagentFilter{})
		must(t, err)
		if len(subs) != 2 {
			t.Fatalf("yes started %d subagents, want 2", len(subs))
		}
	})
	t.Run("no rejects all", func(t *testing.T) {
		e, key, ps := proposeTwo(t)
		want := "OK, not spawning researcher (" + ps[0].ID + ").\nOK, not spawning researcher (" + ps[1].ID + ")."
		if got := sayIn(t, e, key, "no"); got != want {
			t.Fatalf("no: %q, want %q", got, want)
		}
		if n := len(pendingOf(t, e, key)); n != 0 {
			t.Fatalf("%d still pending after no", n)
		}
	})
	t.Run("yes to one", func(t *testing.T) {
		e, key, ps := proposeTwo(t)
		if got := sayIn(t, e, key, "yes to "+ps[1].ID); !strings.HasPrefix(got, "🚀 Spawning researcher subagent (S-") || strings.Contains(got, "\n") {
			t.Fatalf("yes to one: %q", got)
		}
		left := pendingOf(t, e, key)
		if len(left) != 1 || left[0].ID != ps[0].ID {
			t.Fatalf("pending after yes to %s: %+v", ps[1].ID, left)
		}
		if got := sayIn(t, e, key, "no to "+ps[0].ID); got != "OK, not spawning researcher ("+ps[0].ID+")." {
			t.Fatalf("no to one: %q", got)
		}
		subs, err := e.c.Subagents(ctx(t), client.SubagentFilter{})
		must(t, err)
		if len(subs) != 1 || len(pendingOf(t, e, key)) != 0 {
			t.Fatalf("%d subagents, want 1", len(subs))
		}
	})
}

// proposeTwo runs a turn that proposes two spawns and returns its
// session and the proposals.
func proposeTwo(t *testing.T) (*env, string, []client.Proposal) {
	t.Helper()
	e := newEnv(t, envOptions{script: confirmScript, confirm: "always"})
	start, _, _ := e.chat(client.ChatRequest{Message: "research this"})
	ps := pendingOf(t, e, start.SessionKey)
	if len(ps) != 2 {
		t.Fatalf("%d proposals, want 2", len(ps))
	}
	return e, start.SessionKey, ps
}

// sayIn sends a chat message to the session and returns the reply.
func sayIn(t *testing.T, e *env, key, msg string) string {
	t.Helper()
	_, _, res := e.chat(client.ChatRequest{SessionKey: key, Message: msg})
	if res.Status != "success" {
		t.Fatalf("%q: %+v", msg, res)
	}
	return res.Text
}

// TestAPISpawnRefusesAScriptPath: POST /api/subagents may not name a
// scripted model by its path (only the operator may): 400-class refusal
// saying so, nothing started.
func TestAPISpawnRefusesAScriptPath(t *testing.T) {
	e := newEnv(t, envOptions{})
	code, body := e.do("POST", "/api/subagents", `{"role":"researcher","task":"cheap","model":"`+e.model+`"}`, nil)
	if code < 400 || code >= 500 || !strings.Contains(body, "only the operator may name a scripted model") {
		t.Fatalf("spawn on a script path: %d %s", code, body)
	}
	if n := len(e.in.Subagent.List(true)); n != 0 {
		t.Fatalf("%d subagents started", n)
	}
}
