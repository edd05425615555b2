package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/llm/llmfake"
	"github.com/avaagent/ava/store/sqlite"
)

// kill -9 during an orchestrator turn: the person's message was stored
// before the model call, so after a restart it is in the history before
// the next turn's, the killed turn has an end in its stream
// (interrupted, as soon as the daemon is back), and the next prompt has the request before the
// [Subagent] result of the subagent it waited for.
func TestKilledTurnKeepsTheRequestAndEndsInterrupted(t *testing.T) {
	fake := llmfake.NewOpenAI(t)
	fake.Respond = func(r llmfake.Request) llmfake.Turn {
		raw := string(r.Raw)
		switch {
		case strings.Contains(raw, "SECOND request"):
			return llmfake.Turn{Text: "second answer"}
		case strings.Contains(raw, "count things"): // the subagent
			return llmfake.Turn{Text: "the subagent found 42"}
		}
		return llmfake.Turn{Hang: true}
	}
	env, _ := daemonEnv(t)
	env = append(env, "AVA_MODEL=openai/x", "OPENAI_BASE_URL="+fake.URL, "OPENAI_API_KEY=sk-test", "AVA_RESUME_ATTEMPTS=0")
	d := startDaemon(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	chat, err := d.c.Chat(ctx, client.ChatRequest{Message: "FIRST request"})
	if err != nil {
		t.Fatal(err)
	}
	defer chat.Close()
	key := chat.SessionKey
	select {
	case <-fake.Hanging():
	case <-ctx.Done():
		t.Fatalf("the turn never called the model (%d requests)\n%s", len(fake.Requests()), d.stderr)
	}
	// A background subagent of the session ends while the turn runs.
	sa, _, err := d.c.Spawn(ctx, client.SpawnRequest{Role: "researcher", Task: "count things", Parent: key})
	if err != nil {
		t.Fatal(err)
	}
	for sub, _ := d.c.Subagent(ctx, sa.ID); sub.Status != "success"; sub, _ = d.c.Subagent(ctx, sa.ID) {
		if ctx.Err() != nil {
			t.Fatalf("subagent %+v never finished", sub)
		}
		time.Sleep(20 * time.Millisecond)
	}
	kill(t, d)

	d2 := startDaemon(t, env)
	// The restarted daemon ended the killed turn before taking messages.
	if turns := turnsInStream(t, d2.c, key, 1); strings.Join(turns, " ") != "SessionStart SessionEnd:interrupted" {
		t.Fatalf("turns in the stream after the restart: %q", turns)
	}
	next := chatText(t, d2.c, client.ChatRequest{SessionKey: key, Message: "SECOND request"})
	if next.Text != "second answer" {
		t.Fatalf("after restart %+v\n%s", next, d2.stderr)
	}
	// The prompt: the killed request, then the result, then the new one.
	var prompt string
	for _, r := range fake.Requests() {
		if strings.Contains(string(r.Raw), "SECOND request") {
			msgs, _ := json.Marshal(r.Body["messages"].([]any)[1:]) // the system prompt aside
			prompt = string(msgs)
		}
	}
	first, result, second := strings.Index(prompt, "FIRST request"), strings.Index(prompt, "the subagent found 42"), strings.Index(prompt, "SECOND request")
	if first < 0 || result < 0 || !(first < result && result < second) {
		t.Fatalf("next prompt order: request %d, result %d, new request %d:\n%s", first, result, second, prompt)
	}
	// The history: each request once, the killed one first.
	st, err := sqlite.Open(ctx, filepath.Join(envValue(env, "AVA_DATA_ROOT"), sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs, err := st.Messages(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range msgs {
		order = append(order, m.Role+": "+strings.SplitN(m.Text, "\n", 2)[0])
	}
	if len(msgs) != 5 || msgs[0].Text != "FIRST request" || msgs[1].Role != "subagent" || msgs[2].Role != "assistant" ||
		msgs[3].Text != "SECOND request" || msgs[4].Text != "second answer" {
		t.Fatalf("history %q", order)
	}
	// The stream: the killed turn ends interrupted before the next starts.
	turns := turnsInStream(t, d2.c, key, 2)
	if strings.Join(turns, " ") != "SessionStart SessionEnd:interrupted SessionStart SessionEnd:success" {
		t.Fatalf("turns in the stream: %q", turns)
	}
}

// envValue is the value of name in env (KEY=value form), the last one.
func envValue(env []string, name string) string {
	v := ""
	for _, e := range env {
		if k, val, ok := strings.Cut(e, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// turnsInStream replays the session's stream and returns its turn starts
// and ends, with each end's status, until it has read ends of them.
func turnsInStream(t *testing.T, c *client.Client, key string, ends int) []string {
	t.Helper()
	st, err := c.Stream(bg(t), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []string
	for ended := 0; ended < ends; {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream: %v (so far %q)", err, out)
		}
		if ev.ID == 0 {
			continue
		}
		var se client.SessionEvent
		_ = json.Unmarshal(ev.Data, &se)
		if se.AgentID != "ava" {
			continue
		}
		switch se.EventType {
		case "SessionStart":
			out = append(out, se.EventType)
		case "SessionEnd":
			var c struct{ Status string }
			_ = json.Unmarshal(se.Content, &c)
			out = append(out, se.EventType+":"+c.Status)
			ended++
		}
	}
	return out
}
