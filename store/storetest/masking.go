package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/redact"
	"github.com/avaagent/ava/store"
)

// Masked writes a secret through every write method that takes free
// text, on the fresh store open returns for r, and reads back the masked
// value; the caller's values are left as they were. A backend runs it
// from its own tests, as it runs Run.
func Masked(t *testing.T, open func(t *testing.T, r *redact.Redactor) store.Store) {
	const (
		secret = "opensesame-configured" // a configured value
		token  = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	)
	ctx := context.Background()
	s := open(t, redact.New(redact.Options{Secrets: []string{secret}}))
	blocks := json.RawMessage(`[{"type":"text","text":"` + token + `"}]`)
	m, err := s.AppendMessage(ctx, store.Message{SessionKey: "ava:cli:x", Role: store.RoleUser, Text: "pw " + secret, Blocks: blocks})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []store.Message{{SessionKey: "ava:cli:x", Role: store.RoleAssistant, Text: token}}
	if err := s.AppendMessages(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	run := store.Run{ID: "0b7f7a2e-3c1d-4e5f-8a9b-0c1d2e3f4a5b", ShortID: "S-0b7f7a", SessionKey: "ava:subagent:S-0b7f7a",
		ParentSession: "ava:cli:x", Mode: store.ModeSingle, Role: "researcher", Task: "use " + token,
		Config: json.RawMessage(`{"task":"use ` + token + `"}`), Status: lifecycle.Running, CreatedAt: time.Now()}
	if err := s.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	fin := &store.RunFinish{Result: json.RawMessage(`{"summary":"` + secret + `"}`), Error: "failed with " + token,
		Messages: []store.Message{{SessionKey: run.SessionKey, Role: store.RoleAssistant, Text: "said " + secret}}}
	if err := s.TransitionRun(ctx, run.ID, "", []lifecycle.Status{lifecycle.Running}, lifecycle.Error, fin); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AnnounceResult(ctx, run.ID, "", store.Message{Text: "result " + token}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePending(ctx, store.PendingSpawn{ID: "p1", SessionKey: "ava:cli:x", Config: json.RawMessage(`{"task":"` + secret + `"}`),
		Rationale: token, Status: store.SpawnPending, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DecidePending(ctx, "p1", store.SpawnConfirmed, json.RawMessage(`{"task":"`+token+`"}`), ""); err != nil {
		t.Fatal(err)
	}
	mem, err := s.WriteMemory(ctx, store.Memory{Content: "key " + secret, Tags: []string{token}, Source: "user"})
	if err != nil {
		t.Fatal(err)
	}

	var got []string
	got = append(got, m.Text, string(m.Blocks), mem.Content, strings.Join(mem.Tags, ","))
	stored, err := s.Messages(ctx, "ava:cli:x", 0)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.Messages(ctx, run.SessionKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range append(stored, sub...) {
		got = append(got, m.Text, string(m.Blocks))
	}
	r, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.GetPending(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	mems, err := s.RecentMemory(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	posted, err := s.PostFinding(ctx, store.Finding{GroupID: "g1", RunID: run.ID, ShortID: run.ShortID, Role: run.Role, Text: "found " + token})
	if err != nil {
		t.Fatal(err)
	}
	board, err := s.Findings(ctx, "g1", 0, "")
	if err != nil || len(board) != 1 {
		t.Fatalf("findings %+v, %v", board, err)
	}
	got = append(got, posted.Text, board[0].Text)
	got = append(got, r.Task, string(r.Config), string(r.Result), r.Error, string(p.Config), p.Rationale, mems[0].Content, strings.Join(mems[0].Tags, ","))
	if len(stored) != 3 || len(sub) != 1 {
		t.Fatalf("%d and %d messages, want 3 and 1", len(stored), len(sub))
	}
	for _, g := range got {
		if g == "" {
			continue // a message without blocks
		}
		if strings.Contains(g, secret) || strings.Contains(g, "ghp_") || !strings.Contains(g, redact.Redacted) {
			t.Errorf("stored %q, want it masked", g)
		}
	}
	if msgs[0].Text != token || !strings.Contains(fin.Messages[0].Text, secret) || !strings.Contains(string(fin.Result), secret) {
		t.Errorf("the caller's values were changed: %+v %+v", msgs, fin)
	}
}
