package telegram_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"go.uber.org/goleak"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/telegram"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const chatID, userID = 4242, 77

// long is an answer longer than one Telegram message.
var long = strings.Repeat("A paragraph of the long answer, with words in it.\n\n", 200)

const script = `conversations:
  - match: "Begin the task: ASK branch"
    turns:
      - tool_calls: [{name: ask_user, args: {question: "Which branch?"}}]
      - text: "read {{last_result}}"
  - match: "ASKBG"
    turns:
      - text: "asking"
        tool_calls:
          - name: spawn_subagent
            args: {role: asker, task: "ASK branch", background: true, model: "MODEL"}
      - text: "an asker runs"
  - match: "slow research"
    turns:
      - text: "found it"
        delay: 700ms
        citations: [{url: "https://example.com/pricing", title: "Pricing", cited_text: "$0.006 per minute"}]
  - match: "long research"
    turns:
      - text: LONGTEXT
        delay: 900ms
  - match: "BIGBG"
    turns:
      - text: "starting"
        tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: "long research", background: true, model: "MODEL"}
      - text: "it runs in the background"
      - text: "REPORTED-BIG"
  - match: "BACKGROUND"
    turns:
      - text: "starting"
        tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: "slow research", background: true, model: "MODEL"}
      - text: "it runs in the background"
      - text: "REPORTED: the slow research found it"
  - match: "specialized .* subagent"
    turns:
      - text: "subagent answer"
  - match: "PROCESS"
    replies:
      - when: {result: {}}
        text: "The command said: {{last_result}}"
      - tool_calls: [{name: run_bash, args: {command: "echo RAN_IN_TELEGRAM", timeout_seconds: 90}}]
  - match: "SPAWN"
    turns:
      - text: "proposing a subagent"
        tool_calls:
          - name: spawn_subagent
            args: {role: researcher, task: "look it up", background: true}
      - text: "waiting for your answer"
  - match: "MERGE-TWO"
    turns:
      - text: "both: {{input}}"
        delay: 4s
      - text: "the third, on its own"
  - match: "MERGE-ONE"
    turns:
      - text: "thinking about the first"
        tool_calls:
          - name: list_subagents
            args: {}
      - text: "only the first"
        delay: 10s
  - match: "LONG"
    turns:
      - text: LONGTEXT
  - match: "ENTITIES"
    turns:
      - text: "😀 **bold** and \u0060code\u0060\n\n\u0060\u0060\u0060go\nx := 1\n\u0060\u0060\u0060\n\n- item [docs](https://example.com/d) [bad](javascript:alert(1)) <b>raw</b>"
  - match: "MARKDOWN"
    turns:
      - text: "*unclosed _bold [link]( <b>not html</b> & \u00a0"
  - turns:
      - text: "hello from ava, streamed in several small pieces so that the answer is edited as it grows"
      - text: "second answer"
      - text: "third answer"
`

// env is a channel over a real instance (SQLite, the scripted model)
// talking to a fake Bot API.
type env struct {
	t   *testing.T
	api *fakeBotAPI
	rt  *ava.Runtime
	cfg telegram.Config
}

func newEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "script.yaml")
	text := strings.ReplaceAll(script, "LONGTEXT", strings.ReplaceAll(fmtYAML(long), "\n", "\\n"))
	// The orchestrator names the script through an alias config.yaml
	// maps to it: only the operator may name a scripted model by path.
	text = strings.ReplaceAll(text, "MODEL", "scripted/sonnet")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// A custom role that may ask the person (ask_user).
	if err := os.MkdirAll(filepath.Join(root, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "agents", "asker.md"),
		[]byte("---\nname: asker\ndescription: asks\ntools: [read_file, ask_user]\nmodel: haiku\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_MODEL": "scripted/" + path}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Aliases = map[string]map[string]string{"scripted": {"haiku": path, "sonnet": path, "opus": path}}
	rt, err := ava.Open(context.Background(), ava.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	api := newFakeBotAPI(t)
	return &env{t: t, api: api, rt: rt, cfg: telegram.Config{Token: fakeToken, APIURL: api.srv.URL,
		Allowed: []int64{chatID}, Runtime: rt, Logger: testLogger(),
		PollTimeout: time.Second, EditInterval: 20 * time.Millisecond, StatusInterval: 50 * time.Millisecond, TypingInterval: 50 * time.Millisecond,
		ChatInterval: time.Millisecond}}
}

func fmtYAML(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// run starts a channel and returns its stop function.
func (e *env) run(cfg telegram.Config) (*telegram.Channel, func()) {
	e.t.Helper()
	ch, err := telegram.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ch.Run(ctx) }()
	return ch, func() { cancel(); <-done }
}

func TestRoundTripStreamsByEdits(t *testing.T) {
	e := newEnv(t)
	_, stop := e.run(e.cfg)
	defer stop()
	e.api.push(message(1, chatID, userID, "hi"))
	want := "hello from ava, streamed in several small pieces so that the answer is edited as it grows"
	calls := e.api.waitFor("the final answer", func(cs []call) bool {
		all := append(texts(cs, "sendMessage", chatID), texts(cs, "editMessageText", chatID)...)
		for _, s := range all {
			if s == want {
				return true
			}
		}
		return false
	})
	if count(calls, "editMessageText") == 0 {
		t.Fatalf("the answer was not streamed by edits: %+v", calls)
	}
	if count(calls, "sendChatAction") == 0 {
		t.Fatal("no typing action while the answer was written")
	}
	for _, c := range calls {
		if c.Params["parse_mode"] != nil {
			t.Fatalf("a send with parse_mode: %+v", c)
		}
	}
	waitHandled(t, e, 1)
}

func TestLongAnswerIsSplitAndMarkdownSentAsIs(t *testing.T) {
	e := newEnv(t)
	_, stop := e.run(e.cfg)
	defer stop()
	e.api.push(message(1, chatID, userID, "LONG please"))
	calls := e.api.waitFor("the long answer's parts", func(cs []call) bool {
		sent := texts(cs, "sendMessage", chatID)
		if len(sent) < 3 {
			return false
		}
		return strings.Count(strings.Join(sent[1:], ""), "paragraph") >= 200-strings.Count(lastEdit(cs), "paragraph")
	})
	parts := append([]string{lastEdit(calls)}, texts(calls, "sendMessage", chatID)[1:]...)
	total := 0
	for _, p := range parts {
		if n := len([]rune(p)); n > telegram.MaxMessage {
			t.Fatalf("a part of %d characters", n)
		}
		if !strings.HasSuffix(p, "in it.") {
			t.Fatalf("a part not cut at a paragraph: ...%q", p[max(0, len(p)-30):])
		}
		total += strings.Count(p, "paragraph")
	}
	if total != 200 {
		t.Fatalf("%d paragraphs across the parts, want 200", total)
	}
	// A fresh session (/new) starts the script's Markdown conversation.
	e.api.push(message(2, chatID, userID, "/new"))
	e.api.push(message(3, chatID, userID, "MARKDOWN now"))
	e.api.waitFor("the markdown answer", func(cs []call) bool {
		for _, s := range append(texts(cs, "sendMessage", chatID), texts(cs, "editMessageText", chatID)...) {
			if strings.HasPrefix(s, "*unclosed _bold [link](") {
				return true
			}
		}
		return false
	})
}

// lastEdit is the last edited text (the first part of the final answer).
func lastEdit(calls []call) string {
	edits := texts(calls, "editMessageText", chatID)
	if len(edits) == 0 {
		return texts(calls, "sendMessage", chatID)[0]
	}
	return edits[len(edits)-1]
}

func TestChatNotAllowedIsRefusedOnceAndNeverReachesTheModel(t *testing.T) {
	e := newEnv(t)
	_, stop := e.run(e.cfg)
	defer stop()
	const stranger = 999
	e.api.push(message(1, stranger, 555, "let me in"))
	e.api.push(message(2, stranger, 555, "please"))
	e.api.push(message(3, chatID, userID, "hi"))
	calls := e.api.waitFor("the allowed chat's answer", func(cs []call) bool { return len(texts(cs, "sendMessage", chatID)) > 0 })
	waitHandled(t, e, 3)
	calls = e.api.waitFor("everything", func(cs []call) bool { return true })
	refusals := texts(calls, "sendMessage", stranger)
	if len(refusals) != 1 || !strings.Contains(refusals[0], "999") {
		t.Fatalf("refusals %q", refusals)
	}
	last, err := e.rt.LastSeq(context.Background(), "ava:telegram:999")
	if err != nil || last != 0 {
		t.Fatalf("the stranger's text reached a session: %d events, %v", last, err)
	}
}

func TestTooManyRequestsIsWaitedOut(t *testing.T) {
	e := newEnv(t)
	e.api.mu.Lock()
	e.api.tooMany["sendMessage"] = 1
	e.api.mu.Unlock()
	_, stop := e.run(e.cfg)
	defer stop()
	e.api.push(message(1, chatID, userID, "/help"))
	start := time.Now()
	calls := e.api.waitFor("the help text after a 429", func(cs []call) bool {
		return len(texts(cs, "sendMessage", chatID)) == 2
	})
	if n := len(texts(calls, "sendMessage", chatID)); n != 2 || time.Since(start) < time.Second {
		t.Fatalf("%d sends in %s: the 429's retry_after was not honoured", n, time.Since(start))
	}
}

func TestRestartNeitherLosesNorRepeatsAnUpdate(t *testing.T) {
	e := newEnv(t)
	_, stop := e.run(e.cfg)
	e.api.push(message(1, chatID, userID, "hi"))
	waitHandled(t, e, 1)
	// Handled means handed to the session; the answer streams after.
	e.api.waitFor("the first answer", func(cs []call) bool {
		return slices.Contains(append(texts(cs, "sendMessage", chatID), texts(cs, "editMessageText", chatID)...),
			"hello from ava, streamed in several small pieces so that the answer is edited as it grows")
	})
	stop()
	e.api.push(message(2, chatID, userID, "again"))
	_, stop = e.run(e.cfg)
	defer stop()
	defer func() {
		e.api.mu.Lock()
		t.Logf("offsets %v", e.api.offsets)
		e.api.mu.Unlock()
	}()
	calls := e.api.waitFor("the second answer", func(cs []call) bool {
		for _, s := range append(texts(cs, "sendMessage", chatID), texts(cs, "editMessageText", chatID)...) {
			if s == "second answer" {
				return true
			}
		}
		return false
	})
	waitHandled(t, e, 2)
	first := 0
	for _, s := range texts(calls, "sendMessage", chatID) {
		if strings.HasPrefix(s, "hello from ava") {
			first++
		}
	}
	if first != 1 {
		t.Fatalf("the first update was answered %d times", first)
	}
	e.api.mu.Lock()
	offsets := append([]int64(nil), e.api.offsets...)
	e.api.mu.Unlock()
	if offsets[0] != 0 || !containsOffset(offsets, 2) {
		t.Fatalf("getUpdates offsets %v: the restart did not resume after the stored update", offsets)
	}
}

func containsOffset(offsets []int64, want int64) bool {
	for _, o := range offsets {
		if o == want {
			return true
		}
	}
	return false
}

func TestWebhookChecksTheSecret(t *testing.T) {
	e := newEnv(t)
	cfg := e.cfg
	cfg.WebhookSecret = "s3cret"
	ch, stop := e.run(cfg)
	defer stop()
	srv := httptest.NewServer(ch.WebhookHandler())
	defer srv.Close()
	post := func(secret string, id int64) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(jsonString(message(id, chatID, userID, "/help"))))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("wrong", 1); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", code)
	}
	if code := post("", 2); code != http.StatusUnauthorized {
		t.Fatalf("no secret: %d", code)
	}
	if code := post("s3cret", 3); code != http.StatusOK {
		t.Fatalf("right secret: %d", code)
	}
	e.api.waitFor("the help text", func(cs []call) bool { return len(texts(cs, "sendMessage", chatID)) == 1 })
	waitHandled(t, e, 3)
	if pending, _ := e.rt.ChannelUpdates().PendingUpdates(context.Background(), telegram.ChannelName); len(pending) != 0 {
		t.Fatalf("pending %+v", pending)
	}
}

// waitHandled waits until no stored update up to id is pending.
func waitHandled(t *testing.T, e *env, id int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending, err := e.rt.ChannelUpdates().PendingUpdates(context.Background(), telegram.ChannelName)
		if err != nil {
			t.Fatal(err)
		}
		next, _ := e.rt.ChannelUpdates().NextUpdate(context.Background(), telegram.ChannelName)
		if len(pending) == 0 && next > id {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("updates pending %+v (next %d)", pending, next)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("AVA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func TestProposalButtons(t *testing.T) {
	e := newEnv(t, "AVA_CONFIRM", "always", "AVA_CONFIRM_TIMEOUT", "2s")
	_, stop := e.run(e.cfg)
	defer stop()
	id := int64(0)
	next := func() int64 { id++; return id }
	for _, tc := range []struct {
		press string
		wait  time.Duration
		want  string
		again bool // a second press says it was answered already
	}{
		{"yes", 0, "Started S-", false},
		{"no", 0, "Not started.", true},
		{"yes", 2100 * time.Millisecond, "expired", false},
	} {
		e.api.push(message(next(), chatID, userID, "/new"))
		e.api.push(message(next(), chatID, userID, "SPAWN something"))
		calls := e.api.waitFor("a proposal with buttons", func(cs []call) bool { return pendingButton(cs) != "" })
		pending := pendingButton(calls)
		e.api.resetCalls()
		time.Sleep(tc.wait) // past the proposal's expiry
		e.api.push(map[string]any{"update_id": next(), "callback_query": map[string]any{"id": "cb" + pending,
			"from": map[string]any{"id": userID, "is_bot": false, "first_name": "P"}, "chat_instance": "x",
			"data":    "spawn:" + pending + ":" + tc.press,
			"message": map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": chatID, "type": "private"}}}})
		calls = e.api.waitFor("the decision", func(cs []call) bool {
			for _, s := range texts(cs, "sendMessage", chatID) {
				if strings.Contains(s, tc.want) {
					return count(cs, "answerCallbackQuery") == 1
				}
			}
			return false
		})
		e.api.resetCalls()
		if tc.again {
			e.api.push(map[string]any{"update_id": next(), "callback_query": map[string]any{"id": "cb-again" + pending,
				"from": map[string]any{"id": userID, "is_bot": false, "first_name": "P"}, "chat_instance": "x",
				"data":    "spawn:" + pending + ":yes",
				"message": map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": chatID, "type": "private"}}}})
			e.api.waitFor("the answer to a second press", func(cs []call) bool {
				return slices.Contains(texts(cs, "sendMessage", chatID), "This proposal was already answered.")
			})
			e.api.resetCalls()
		}
	}
	// A press on a proposal of another session (here a made-up one) is
	// answered, not applied.
	e.api.push(map[string]any{"update_id": next(), "callback_query": map[string]any{"id": "cb-x",
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": "P"}, "chat_instance": "x",
		"data":    "spawn:P-000000:yes",
		"message": map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": chatID, "type": "private"}}}})
	e.api.waitFor("the refusal of a foreign press", func(cs []call) bool {
		for _, s := range texts(cs, "sendMessage", chatID) {
			if strings.Contains(s, "not one of this chat's") {
				return true
			}
		}
		return false
	})
}

// TestProcessProposalInTheChat: under an asking policy, a long run_bash
// of the orchestrator's is shown as what it is (the tool, the command,
// its estimate; a timeout as its change) with Yes and No; a typed "yes"
// while the turn waits is the answer (not a message queued behind the
// turn), and the turn's answer carries the command's output. Then the
// Yes button does the same, and No runs nothing.
func TestProcessProposalInTheChat(t *testing.T) {
	e := newEnv(t, "AVA_CONFIRM", "always", "AVA_MERGE_WINDOW", "5s")
	_, stop := e.run(e.cfg)
	defer stop()
	id := int64(0)
	next := func() int64 { id++; return id }
	propose := func() (string, string) {
		t.Helper()
		e.api.push(message(next(), chatID, userID, "/new"))
		e.api.push(message(next(), chatID, userID, "PROCESS build"))
		calls := e.api.waitFor("a process proposal with buttons", func(cs []call) bool { return pendingButton(cs) != "" })
		pending := pendingButton(calls)
		var shown string
		for _, s := range texts(calls, "sendMessage", chatID) {
			if strings.Contains(s, pending) {
				shown = s
			}
		}
		e.api.resetCalls()
		return pending, shown
	}
	press := func(pending, yesNo string) {
		e.api.push(map[string]any{"update_id": next(), "callback_query": map[string]any{"id": "cb" + pending + yesNo,
			"from": map[string]any{"id": userID, "is_bot": false, "first_name": "P"}, "chat_instance": "x",
			"data":    "spawn:" + pending + ":" + yesNo,
			"message": map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": chatID, "type": "private"}}}})
	}
	answered := func(what string, want ...string) []string {
		t.Helper()
		calls := e.api.waitFor(what, func(cs []call) bool {
			got := strings.Join(sent(cs), "\n---\n")
			for _, w := range want {
				if !strings.Contains(got, w) {
					return false
				}
			}
			return true
		})
		e.api.resetCalls()
		return sent(calls)
	}

	pending, shown := propose()
	for _, want := range []string{"run_bash: `echo RAN_IN_TELEGRAM` — estimated 90 s", "it declares a 90 s timeout", `"yes but only 30 seconds"`} {
		if !strings.Contains(shown, want) {
			t.Fatalf("the proposal as shown lacks %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "haiku") || strings.Contains(shown, "subagent") {
		t.Fatalf("a process proposal shown as a spawn:\n%s", shown)
	}
	e.api.push(message(next(), chatID, userID, "yes"))
	got := answered("the typed yes and the turn's answer", "▶ Running the run_bash call ("+pending+")", "The command said: RAN_IN_TELEGRAM")
	if slices.ContainsFunc(got, func(s string) bool {
		return strings.Contains(s, "couldn't take") || strings.Contains(s, "answered together")
	}) {
		t.Fatalf("the typed yes was not taken as the answer: %q", got)
	}

	pending, _ = propose()
	press(pending, "yes")
	answered("the Yes button and the turn's answer", "Running it; its output comes in the answer.", "The command said: RAN_IN_TELEGRAM")

	pending, _ = propose()
	press(pending, "no")
	got = answered("the No button and the turn's answer", "Not run.", "declined")
	if slices.ContainsFunc(got, func(s string) bool {
		return strings.Contains(s, "RAN_IN_TELEGRAM\n") || strings.Contains(s, "said: RAN")
	}) {
		t.Fatalf("the command ran after No: %q", got)
	}
}

// sent are the texts of the chat's messages and edits, in order.
func sent(calls []call) []string {
	var out []string
	for _, c := range calls {
		if int64(num(c.Params["chat_id"])) == chatID && (c.Method == "sendMessage" || c.Method == "editMessageText") {
			out = append(out, fmt.Sprint(c.Params["text"]))
		}
	}
	return out
}

// pendingButton is the pending ID of the last Yes button sent, "" if none.
func pendingButton(calls []call) string {
	id := ""
	for _, c := range calls {
		markup, _ := c.Params["reply_markup"].(string)
		if c.Method != "sendMessage" || markup == "" {
			continue
		}
		if i := strings.Index(markup, "spawn:P-"); i >= 0 {
			id = markup[i+len("spawn:") : i+len("spawn:")+8]
		}
	}
	return id
}

func TestProgressAndCompletionArriveUnprompted(t *testing.T) {
	e := newEnv(t, "AVA_CONFIRM", "never", "AVA_PROGRESS_AFTER", "100ms", "AVA_PROGRESS_EVERY", "200ms")
	_, stop := e.run(e.cfg)
	defer stop()
	e.api.push(message(1, chatID, userID, "BACKGROUND please"))
	calls := e.api.waitFor("progress and completion", func(cs []call) bool {
		progress, complete := false, false
		for _, s := range shown(cs, chatID) {
			progress = progress || strings.Contains(s, "still working")
			// The completion lists the sources the answer cites.
			complete = complete || strings.Contains(s, "Complete") && strings.Contains(s, "📎 Sources:\n1. Pricing — https://example.com/pricing")
		}
		return progress && complete
	})
	// Then the orchestrator reports the result by itself (on_complete),
	// with no second message from the person.
	e.api.waitFor("the report", func(cs []call) bool {
		return slices.ContainsFunc(texts(cs, "sendMessage", chatID), func(s string) bool { return strings.Contains(s, "REPORTED: the slow research found it") })
	})
	if count(calls, "sendChatAction") < 2 {
		t.Fatalf("typing was not kept alive while the subagent worked: %+v", calls)
	}
}

// TestStatusLineIsEditedInPlace: a subagent's status line is one
// message, edited as the run progresses (never twice within
// StatusInterval) and ending with the completion: the summary and the
// command that sends the whole result, which /result then sends, split
// into Telegram-sized messages.
func TestStatusLineIsEditedInPlace(t *testing.T) {
	e := newEnv(t, "AVA_CONFIRM", "never", "AVA_PROGRESS_AFTER", "50ms", "AVA_PROGRESS_EVERY", "50ms")
	cfg := e.cfg
	cfg.StatusInterval = 300 * time.Millisecond
	_, stop := e.run(cfg)
	defer stop()
	e.api.push(message(1, chatID, userID, "BIGBG please"))
	// The report may come before the completion's edit, which waits
	// out the interval.
	calls := e.api.waitFor("the report and the completion", func(cs []call) bool {
		return slices.Contains(shown(cs, chatID), "REPORTED-BIG") &&
			slices.ContainsFunc(texts(cs, "editMessageText", chatID), func(s string) bool { return strings.Contains(s, "/result S-") })
	})
	runs, err := e.rt.Subagents(context.Background(), ava.SubagentFilter{Parent: "ava:telegram:4242"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	id := runs[0].ID
	var posts []call
	for _, c := range calls {
		if c.Method == "sendMessage" && strings.Contains(fmt.Sprint(c.Params["text"]), "["+id+"]") {
			posts = append(posts, c)
		}
	}
	if len(posts) != 1 || !strings.HasPrefix(fmt.Sprint(posts[0].Params["text"]), "🔍 ") {
		t.Fatalf("the status line was posted %d times, not once: %+v", len(posts), posts)
	}
	var edits []call
	for _, c := range calls {
		if c.Method == "editMessageText" && int(num(c.Params["message_id"])) == posts[0].MsgID {
			edits = append(edits, c)
		}
	}
	if len(edits) < 2 || !strings.Contains(fmt.Sprint(edits[0].Params["text"]), "still working") {
		t.Fatalf("the status line was not edited to show the progress: %+v", edits)
	}
	last := posts[0].At
	for _, c := range edits {
		if gap := c.At.Sub(last); gap < cfg.StatusInterval {
			t.Errorf("two writes of the status line %v apart (under %v)", gap, cfg.StatusInterval)
		}
		last = c.At
	}
	final := fmt.Sprint(edits[len(edits)-1].Params["text"])
	if !strings.Contains(final, "✅ ") || !strings.Contains(final, "Complete") || !strings.Contains(final, "A paragraph of the long answer") ||
		!strings.HasSuffix(final, "The whole result: /result "+id) || len([]rune(final)) > telegram.MaxMessage {
		t.Fatalf("the completion line: %q", final)
	}

	e.api.resetCalls()
	e.api.push(message(2, chatID, userID, "/result "+id))
	calls = e.api.waitFor("the whole result", func(cs []call) bool {
		return strings.Count(strings.Join(texts(cs, "sendMessage", chatID), "\n"), "A paragraph of the long answer") == 200
	})
	parts := texts(calls, "sendMessage", chatID)
	if len(parts) < 2 || !strings.HasPrefix(parts[0], id+" (researcher): success") {
		t.Fatalf("the result in %d parts, first %.80q", len(parts), parts[0])
	}
	for _, c := range calls {
		if c.Method == "sendMessage" {
			if ents := fmt.Sprint(c.Params["entities"]); !strings.Contains(ents, "bold") {
				t.Errorf("the result's Markdown is not rendered (its heading bold): %v", ents)
			}
			break
		}
	}
	for i, p := range parts {
		if n := len(utf16.Encode([]rune(p))); n > telegram.MaxMessage {
			t.Errorf("part %d is %d units long", i, n)
		}
	}
	e.api.resetCalls()
	e.api.push(message(3, chatID, userID, "/result S-000000"))
	calls = e.api.waitFor("the refusal", func(cs []call) bool { return len(texts(cs, "sendMessage", chatID)) == 1 })
	if got := texts(calls, "sendMessage", chatID)[0]; got != "No subagent S-000000 in this chat (see /status)." {
		t.Errorf("/result of a foreign subagent: %q", got)
	}
}

// TestSubagentQuestionIsAnsweredInTheChat: a background subagent's
// question is posted in the chat, and /answer gives it the answer.
func TestSubagentQuestionIsAnsweredInTheChat(t *testing.T) {
	e := newEnv(t, "AVA_CONFIRM", "never")
	_, stop := e.run(e.cfg)
	defer stop()
	e.api.push(message(1, chatID, userID, "ASKBG please"))
	e.api.waitFor("the question", func(cs []call) bool {
		for _, s := range texts(cs, "sendMessage", chatID) {
			if strings.Contains(s, "asks (Q-") && strings.Contains(s, "Which branch?") && strings.Contains(s, "/answer") {
				return true
			}
		}
		return false
	})
	e.api.push(message(2, chatID, userID, "/answer the main one"))
	e.api.waitFor("the answer taken and the subagent done", func(cs []call) bool {
		sent, done := false, false
		for _, s := range shown(cs, chatID) {
			sent = sent || strings.Contains(s, "Sent your answer to S-")
			done = done || strings.Contains(s, "Complete")
		}
		return sent && done
	})
	runs, err := e.rt.Subagents(context.Background(), ava.SubagentFilter{Parent: "ava:telegram:4242"})
	if err != nil || len(runs) != 1 || runs[0].Result == nil || !strings.Contains(runs[0].Result.Summary+string(runs[0].Result.Output), "The person answered: the main one") {
		t.Fatalf("runs %+v %v", runs, err)
	}
}

func TestMessagesWithinTheMergeWindowAreAnsweredAsOne(t *testing.T) {
	e := newEnv(t, "AVA_MERGE_WINDOW", "2s")
	_, stop := e.run(e.cfg)
	defer stop()
	key := "ava:telegram:" + strconv.Itoa(chatID)
	log := &eventLog{t: t, sub: e.rt.Follow(key, 0)}
	defer log.sub.Close()
	// The first message's turn shows a partial answer, then its model is
	// slow; the second message cancels it, and one turn answers both.
	e.api.push(message(1, chatID, userID, "MERGE-ONE first"))
	e.api.waitFor("the first turn's partial answer", func(cs []call) bool { return len(finals(cs)) > 0 })
	e.api.push(message(2, chatID, userID, "MERGE-TWO second"))
	starts := log.wait(event.SessionStart, 2)
	// Past the window of the merged turn's start (it runs 4s), the third
	// message is queued and answered on its own.
	time.Sleep(2300*time.Millisecond - time.Since(starts[1].Time))
	e.api.push(message(3, chatID, userID, "third"))
	calls := e.api.waitFor("the third answer", func(cs []call) bool {
		return slices.Contains(finals(cs), "the third, on its own")
	})
	got := finals(calls)
	want := []string{"(answered together with your next message)", "both: MERGE-ONE first\n\nMERGE-TWO second", "the third, on its own"}
	if !slices.Equal(got, want) {
		t.Fatalf("messages %q, want %q: the cancelled turn's partial answer noted, one answer to both messages (joined by a blank line), then the third's", got, want)
	}
	for _, c := range calls {
		if text := fmt.Sprint(c.Params["text"]); strings.Contains(text, "request ended") || strings.Contains(text, "only the first") {
			t.Fatalf("the merged turn posted %q", text)
		}
	}
	var status []string
	for _, ev := range log.wait(event.SessionEnd, 3) {
		var c event.SessionContent
		if err := ev.Decode(&c); err != nil {
			t.Fatal(err)
		}
		status = append(status, string(c.Status))
	}
	if !slices.Equal(status, []string{"cancelled", "success", "success"}) {
		t.Fatalf("turns ended %q, want the first cancelled", status)
	}
	waitHandled(t, e, 3)
}

// finals are the texts of the chat's messages as they stand: each sent
// message's last edit, in the order they were sent.
func finals(calls []call) []string {
	var ids []float64
	text := map[float64]string{}
	id := 100.0 // the fake's first message ID is 101
	for _, c := range calls {
		if int64(num(c.Params["chat_id"])) != chatID {
			continue
		}
		switch c.Method {
		case "sendMessage":
			id++
			ids = append(ids, id)
			text[id] = fmt.Sprint(c.Params["text"])
		case "editMessageText":
			text[num(c.Params["message_id"])] = fmt.Sprint(c.Params["text"])
		}
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, text[id])
	}
	return out
}

// eventLog reads a session's events as a test waits for them.
type eventLog struct {
	t    *testing.T
	sub  *event.Subscription
	seen []event.Event
}

// wait reads on until n orchestrator events of type typ have been read
// (counting from the subscription's start) and returns them.
func (l *eventLog) wait(typ event.Type, n int) []event.Event {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		var out []event.Event
		for _, ev := range l.seen {
			if ev.Type == typ && ev.Agent == event.OrchestratorID {
				out = append(out, ev)
			}
		}
		if len(out) >= n {
			return out
		}
		evs, err := l.sub.Next(ctx)
		if err != nil {
			l.t.Fatalf("waiting for %d %s events: %v", n, typ, err)
		}
		l.seen = append(l.seen, evs...)
	}
}

// TestSubagentCommandsGoThroughTheCore: /logs reads one of the chat's
// subagents' steps, /send follows up a finished one (it resumes), and a
// subagent that is not the chat's is refused by both.
func TestSubagentCommandsGoThroughTheCore(t *testing.T) {
	e := newEnv(t, "AVA_CONFIRM", "never")
	_, stop := e.run(e.cfg)
	defer stop()
	key := "ava:telegram:" + strconv.Itoa(chatID)
	e.api.push(message(1, chatID, userID, "BACKGROUND please"))
	e.api.waitFor("the subagent's completion and the report", func(cs []call) bool {
		sent := shown(cs, chatID)
		return slices.ContainsFunc(sent, func(s string) bool { return strings.Contains(s, "Complete") }) &&
			slices.ContainsFunc(sent, func(s string) bool { return strings.Contains(s, "REPORTED") })
	})
	runs, err := e.rt.Subagents(context.Background(), ava.SubagentFilter{Parent: key})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	id := runs[0].ID
	e.api.resetCalls()
	e.api.push(message(2, chatID, userID, "/logs "+id))
	e.api.push(message(3, chatID, userID, "/logs S-000000"))
	e.api.push(message(4, chatID, userID, "/send "+id+" one more thing"))
	e.api.push(message(5, chatID, userID, "/send S-000000 hello"))
	calls := e.api.waitFor("the four replies", func(cs []call) bool { return len(texts(cs, "sendMessage", chatID)) >= 4 })
	got := texts(calls, "sendMessage", chatID)
	if !strings.HasPrefix(got[0], id+", last steps:\n") || !strings.Contains(got[0], "slow research") {
		t.Errorf("/logs of the chat's subagent: %q", got[0])
	}
	for _, i := range []int{1, 3} {
		if got[i] != "No subagent S-000000 in this chat (see /status)." {
			t.Errorf("reply %d to a subagent of no chat: %q", i, got[i])
		}
	}
	if got[2] != "Sent to "+id+" as a follow-up: it resumes with its conversation." {
		t.Errorf("/send to the finished subagent: %q", got[2])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		sa, err := e.rt.Subagent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := e.rt.Trace(ctx, key, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if sa.Status.Final() && slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "one more thing") }) {
			break // the follow-up's turn ran
		}
		if ctx.Err() != nil {
			t.Fatalf("the follow-up did not run: %+v", sa)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
