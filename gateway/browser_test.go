package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/avaagent/ava/gateway/client"
)

// browserScript drives the panel test: a main session that thinks,
// spawns a background subagent whose first turn ends in a command that
// runs until it is stopped, and answers two more messages; the subagent's
// follow-up waits for the test to create "release" in the workspace, so a
// second message is refused as busy and queued however slow the machine.
const browserScript = `conversations:
  - match: "BLOCKTASK"
    turns:
      - text: "looking"
        tool_calls:
          - name: run_bash
            args: {command: "sleep 60"}
      - tool_calls:
          - name: run_bash
            args: {command: "for i in $(seq 1200); do [ -e release ] && exit 0; sleep 0.05; done; exit 1"}
      - text: "follow-up answered"
      - text: "queued answered"
  - match: "SPAWNBG"
    turns:
      - thinking: "The person wants a researcher in the background."
        text: "starting a background subagent"
        tool_calls:
          - name: spawn_subagent
            args: {role: code_reviewer, task: "BLOCKTASK child", model: "MODEL", background: true}
      - text: "parent done"
      - text: "welcome back"
  - turns:
      - text: "quick answer"
`

// TestPanelInBrowser drives the web panel in Chromium against a real
// daemon: a message that spawns a subagent, the subagent in the list and
// on the timeline, its chat (stop, follow-up, a queued message), a
// forced reconnect with no gap and no repeat, a reload, and screenshots
// at desktop and phone sizes.
func TestPanelInBrowser(t *testing.T) {
	chrome := findChromium(t)
	var down atomic.Bool // while set, event streams are cut at connect
	ws := t.TempDir()
	e := newEnv(t, envOptions{script: browserScript, env: map[string]string{"AVA_WORKSPACE": ws, "AVA_PROGRESS_AFTER": "200ms", "AVA_PROGRESS_EVERY": "300ms"}, wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() && r.URL.Path == "/api/chat/stream" {
				dropConnection(w)
				return
			}
			next.ServeHTTP(w, r)
		})
	}})
	b := newBrowser(t, chrome)
	shots := shotDir(t)

	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	// Shift+Enter starts a new line, Enter sends.
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "SPAWNBG please"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.SendKeys(chromedp.CSS(`textarea`), "go"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "parent done")
	key := b.eval(`new URLSearchParams(location.hash.slice(1)).get('s')`)
	if !strings.HasPrefix(key, "ava:web:") {
		t.Fatalf("session key in the URL: %q", key)
	}
	if got := b.eval(`document.querySelector('.msg.user').textContent`); got != "SPAWNBG please\ngo" {
		t.Fatalf("first message %q, want two lines", got)
	}
	b.wait(`document.querySelector('details.thinking:not([open])')?.textContent.includes('researcher in the background')`, "thinking folded away")
	b.waitText(`.line.tool`, "spawn_subagent")
	b.wait(`document.querySelector('.subagent[data-status="running"]') && document.querySelector('.tl-bar[data-status="running"]')`, "the subagent running in the list and on the timeline")
	// The typing indicator: the turn ended, its subagent works on, and
	// its "still working" line is kept up to date in place.
	b.waitText(`.typing`, "Waiting for subagents")
	b.waitText(`.line.progress`, "still working")
	if n := b.eval(`String(document.querySelectorAll('.line.progress').length)`); n != "1" {
		t.Fatalf("%s progress lines for one subagent, want one updated in place", n)
	}
	b.shot(shots, "desktop-chat.png")

	// The subagent as a chat: its stream from the start; stop it.
	b.run(chromedp.Click(chromedp.CSS(`.subagent`)))
	b.wait(`document.querySelector('.chat')?.dataset.session.startsWith('ava:subagent:')`, "the subagent's chat")
	b.waitText(`.msg.task`, "BLOCKTASK child")
	b.waitText(`.typing`, "is working")
	b.run(chromedp.Click(chromedp.CSS(`button.stop`)))
	b.wait(`document.querySelector('.subagent[data-status="cancelled"]') && document.querySelector('.tl-bar[data-status="cancelled"]')`, "the subagent cancelled")
	b.waitText(`.line.end`, "stopped")
	b.wait(`!document.querySelector('.typing')`, "no typing indicator once it ended")

	// A follow-up, and while it runs a second message: 409, then queued.
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "FOLLOWUP one"), chromedp.KeyEvent(kb.Enter))
	b.wait(`document.querySelector('.subagent[data-status="running"]')`, "the subagent running again")
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "FOLLOWUP two"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.offer`, "Queue")
	b.waitText(`.offer button.steer`, "Steer") // a running subagent can be steered instead
	b.run(chromedp.Click(chromedp.CSS(`.offer button.queue`)))
	b.wait(`!document.querySelector('.offer')`, "the offer gone once queued")
	must(t, os.WriteFile(filepath.Join(ws, "release"), nil, 0o600))
	b.waitText(`.msg.assistant`, "queued answered")
	subKey := b.eval(`document.querySelector('.chat').dataset.session`)
	b.checkRendered(e, subKey)
	msgs := b.texts(`.msg`)
	want := []string{"BLOCKTASK child", "FOLLOWUP one", "follow-up answered", "FOLLOWUP two", "queued answered"}
	if !containsInOrder(msgs, want) {
		t.Fatalf("subagent chat %q, want %q in order", msgs, want)
	}
	b.shot(shots, "desktop-subagent.png")

	// Back to Ava; cut its stream, let it answer a message sent from
	// elsewhere meanwhile, and let the panel reconnect by itself.
	b.run(chromedp.Click(chromedp.CSS(`button.back`)))
	b.waitText(`.msg.assistant`, "parent done")
	b.wait(`!document.querySelector('.line.progress') && document.querySelector('.line.complete')`, "the progress line gone once the subagent ended")
	b.wait(`document.querySelector('.chat').dataset.conn === 'live'`, "the stream live")
	down.Store(true)
	e.ts.CloseClientConnections()
	b.wait(`document.querySelector('.chat').dataset.conn === 'reconnecting'`, "the panel noticing the cut")
	if _, _, res := e.chat(client.ChatRequest{SessionKey: key, Message: "while you were away"}); res.Text != "welcome back" {
		t.Fatalf("message sent during the cut: %+v", res)
	}
	down.Store(false)
	b.waitText(`.msg.assistant`, "welcome back")
	b.checkRendered(e, key)

	// A reload keeps the conversation and its subagents.
	b.run(chromedp.Reload())
	b.waitText(`.msg.assistant`, "welcome back")
	b.wait(`document.querySelector('.subagent[data-status="success"]')`, "the subagent in the list after a reload")
	b.checkRendered(e, key)
	b.shot(shots, "desktop-after-reload.png")

	// A subagent started from elsewhere joins the list and the timeline.
	if _, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "researcher", Task: "quick look", Model: spawnModel, Parent: key}); err != nil {
		t.Fatal(err)
	}
	b.wait(`document.querySelectorAll('.tl-bar').length === 2 && document.querySelectorAll('.subagent[data-status="success"]').length === 2`, "a second subagent on the timeline")

	b.run(chromedp.EmulateViewport(390, 844))
	b.shot(shots, "phone-chat.png")
	b.run(chromedp.Click(chromedp.CSS(`nav.tabs button:nth-child(2)`)))
	b.wait(`document.querySelector('.tl-bar') && getComputedStyle(document.querySelector('.side')).display !== 'none'`, "the subagents tab")
	b.shot(shots, "phone-subagents.png")
	b.run(chromedp.Click(chromedp.CSS(`.subagent:not([data-status="running"])[data-id="` + subID(subKey) + `"]`)))
	b.waitText(`.msg.assistant`, "queued answered")
	b.shot(shots, "phone-subagent.png")
}

// TestPanelAsksForTheTokenOnce: a browser with no session is asked for
// the token on the first 401, which it exchanges for the session cookie
// without keeping the token, and a reload does not ask again.
func TestPanelAsksForTheTokenOnce(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: browserScript, token: "s3cret"})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "hello"), chromedp.KeyEvent(kb.Enter))
	b.wait(`document.querySelector('.modal input[type=password]')`, "the token dialog")
	b.run(chromedp.SendKeys(chromedp.CSS(`.modal input`), "s3cret"), chromedp.Click(chromedp.CSS(`.modal button[type=submit]`)))
	b.waitText(`.msg.assistant`, "quick answer")
	if got := b.eval(`String(localStorage.getItem('ava.token')) + '|' + document.cookie`); got != "null|" {
		t.Fatalf("the page kept the token or sees the cookie: %q", got)
	}
	b.run(chromedp.Reload())
	b.waitText(`.msg.assistant`, "quick answer")
	b.wait(`document.querySelector('.chat').dataset.conn === 'live' && !document.querySelector('.modal')`, "the stream live without asking again")
}

// TestPanelLogsInThroughTheLink: the one-time link ava serve prints logs
// the browser in (no token dialog, the code gone from the address bar,
// an HttpOnly SameSite=Strict cookie of the daemon's port), and works
// once: a second browser opening it is told so and gets no login.
func TestPanelLogsInThroughTheLink(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: browserScript})
	link := e.loginURL()
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	if got := b.eval(`location.pathname + location.search + location.hash`); got != "/" {
		t.Fatalf("after the link the address is %q, want / (the code out of the address bar)", got)
	}
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "hello"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "quick answer")
	if b.eval(`document.querySelector('.modal') ? 'dialog' : 'none'`) != "none" {
		t.Fatal("the panel asked for the token after the login link")
	}
	cctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	res, err := chromedp.Call(cctx, network.GetCookies, network.GetCookiesParams{})
	must(t, err)
	cookies := res.Cookies
	_, port, _ := net.SplitHostPort(e.ts.Listener.Addr().String())
	if len(cookies) != 1 || cookies[0].Name != "ava_session_"+port || !cookies[0].HTTPOnly ||
		cookies[0].SameSite != network.CookieSameSiteStrict || cookies[0].Path != "/" {
		t.Fatalf("cookies %+v, want one HttpOnly SameSite=Strict ava_session_%s at /", cookies, port)
	}
	if got := b.eval(`document.cookie`); got != "" {
		t.Fatalf("the page reads the session cookie: %q", got)
	}

	other := newBrowser(t, chrome)
	other.run(chromedp.Navigate(link))
	other.waitText(`.link-spent`, "ava panel")
	other.waitText(`.link-spent .detail`, "already used or has expired")
	other.run(chromedp.Navigate(e.ts.URL + "/"))
	octx, ocancel := context.WithTimeout(other.ctx, 15*time.Second)
	defer ocancel()
	if got, err := chromedp.Run(octx, chromedp.Evaluate[string](`fetch('/api/sessions').then(r => String(r.status))`, chromedp.EvalAwaitPromise)); err != nil || got != "401" {
		t.Fatalf("a second browser after the spent link: GET /api/sessions %s %v, want 401", got, err)
	}
}

// subID is a subagent session key's ID.
func subID(key string) string { return key[strings.LastIndex(key, ":")+1:] }

// findChromium finds Debian's Chromium. Without it the test fails when
// AVA_REQUIRE_BROWSER=1 (as in CI), else skips.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AVA_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium or chromium-browser on PATH, and AVA_REQUIRE_BROWSER=1: install it (apt-get install chromium)")
	}
	t.Skip("no chromium or chromium-browser on PATH: the panel's browser test needs it (apt-get install chromium)")
	return ""
}

// dropConnection closes the client's connection without an answer, as a
// network failure would.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	conn.Close()
}

// shotDir is where the screenshots go: the test's artifact folder (kept
// with go test -artifacts -outputdir DIR).
func shotDir(t *testing.T) string {
	dir := t.ArtifactDir()
	t.Logf("screenshots in %s", dir)
	return dir
}

// browser is a headless Chromium driven by chromedp.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T, execPath string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.NoSandbox, // containers and CI run as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", execPath, err)
	}
	return &browser{t: t, ctx: bctx}
}

// run runs actions, failing the test after 15 s.
func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v\n%s", err, b.dump())
	}
}

// wait polls a JavaScript expression until it is truthy.
func (b *browser) wait(expr, what string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	poll := chromedp.Poll[chromedp.Void]("!!("+expr+")", chromedp.WithPollingInterval(50*time.Millisecond))
	if _, err := chromedp.Run(ctx, poll); err != nil {
		b.t.Fatalf("waiting for %s: %v\n%s", what, err, b.dump())
	}
}

// waitText waits for an element matching sel whose text contains text.
func (b *browser) waitText(sel, text string) {
	b.t.Helper()
	b.wait(fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.textContent.includes(%q))`, sel, text), fmt.Sprintf("%s with %q", sel, text))
}

// evalAs returns a JavaScript expression's value, failing the test
// after 15 s.
func evalAs[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\n%s", expr, err, b.dump())
	}
	return v
}

// eval returns a JavaScript expression's value as a string.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	return evalAs[string](b, expr)
}

// texts returns the text of every element matching sel.
func (b *browser) texts(sel string) []string {
	b.t.Helper()
	return evalAs[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, sel))
}

// dump describes the page, for a failure.
func (b *browser) dump() string {
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	out, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	return "page: " + out
}

// shot saves a screenshot of the viewport as a PNG.
func (b *browser) shot(dir, name string) {
	b.t.Helper()
	b.run(chromedp.Sleep(300 * time.Millisecond))
	png := evalShot(b)
	must(b.t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
}

func evalShot(b *browser) []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	return png
}

// renderedKinds are the event types the panel shows as an item, by the
// data-kind it gives them.
var renderedKinds = map[string]string{"UserMessage": "user", "AssistantMessage": "assistant", "ExtendedThinking": "thinking",
	"ToolCall": "tool", "SubagentSpawn": "spawn", "SubagentComplete": "complete", "Error": "error", "FindingPosted": "finding"}

// checkRendered compares the items the panel shows with the session's
// stored events: each shown once, in order, none missing.
func (b *browser) checkRendered(e *env, key string) {
	b.t.Helper()
	var want []string
	for _, ev := range storedEvents(b.t, e, key) {
		kind, ok := renderedKinds[ev.Type]
		if ev.Type == "Error" && isStopError(ev.Data) {
			ok = false // the end line that follows says "stopped"
		}
		if ev.Type == "SessionEnd" && !strings.Contains(string(ev.Data), `"status":"success"`) {
			kind, ok = "end", true
		}
		if ok {
			want = append(want, fmt.Sprintf("%d:%s", ev.ID, kind))
		}
	}
	expr := `[...document.querySelectorAll('.chat [data-seq]')].map(e => e.dataset.seq + ':' + e.dataset.kind)`
	var got []string
	// The last events may still be on their way to the page.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = evalAs[[]string](b, expr)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		b.t.Fatalf("%s: the panel shows %v, the session holds %v", key, got, want)
	}
}

// isStopError reports whether an Error event's data is the one a
// subagent's stream carries when someone stopped it.
func isStopError(data []byte) bool {
	var ev struct {
		Content struct {
			Error string `json:"error"`
			Fatal bool   `json:"fatal"`
		} `json:"content"`
	}
	c := &ev.Content
	return json.Unmarshal(data, &ev) == nil && c.Fatal && (c.Error == "cancelled" || c.Error == "cancelled: cancelled")
}

// storedEvents reads every kept event of a session from the daemon.
func storedEvents(t *testing.T, e *env, key string) []client.Event {
	t.Helper()
	last, err := e.in.Store.LastSeq(ctx(t), key)
	must(t, err)
	st, err := e.c.Stream(ctx(t), key, 0)
	must(t, err)
	defer st.Close()
	if last == 0 {
		return nil
	}
	return until(t, st, func(ev client.Event) bool { return ev.ID == last })
}

// containsInOrder reports whether each of want is a substring of got's
// elements, in order.
func containsInOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && strings.Contains(g, want[i]) {
			i++
		}
	}
	return i == len(want)
}

// TestPanelShowsProposals: a spawn awaiting confirmation is a card with
// the proposal and Yes / No; Yes starts it, No drops it, and each card
// then says how it was decided.
func TestPanelShowsProposals(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: confirmScript, confirm: "always"})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "research this"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "waiting for you")
	b.wait(`document.querySelectorAll('.proposal[data-decision=""]').length === 2`, "two proposals awaiting an answer")
	b.waitText(`.proposal pre`, "Proceed? [Yes/No]")
	b.run(chromedp.Click(chromedp.CSS(`.proposal:nth-of-type(1) button.yes, .proposal button.yes`)))
	b.wait(`document.querySelector('.proposal[data-decision="confirmed"]')?.textContent.includes('started S-')`, "the first proposal confirmed")
	b.wait(`document.querySelector('.subagent')`, "the confirmed subagent in the list")
	b.run(chromedp.Click(chromedp.CSS(`.proposal[data-decision=""] button.no`)))
	b.wait(`document.querySelector('.proposal[data-decision="rejected"]')`, "the second proposal rejected")
	b.shot(shotDir(t), "desktop-proposals.png")
	if ps := pendingOf(t, e, ""); len(ps) != 0 {
		t.Fatalf("%d proposals still pending", len(ps))
	}
}

// TestPanelAnswersAQuestion: a subagent's question shows in its parent's
// chat with an answer box; the answer reaches the subagent, and the card
// then shows it.
func TestPanelAnswersAQuestion(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: askScript, roles: map[string]string{"asker.md": askerRole}})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	sa, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "asker", Task: "ASK in the panel", Model: spawnModel, Parent: res.Session})
	must(t, err)
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.Navigate(e.ts.URL+"/#s="+url.QueryEscape(res.Session)))
	b.waitText(`.question[data-by=""]`, "Which branch should I read?")
	b.run(chromedp.SendKeys(chromedp.CSS(`.question input`), "the main branch"), chromedp.Click(chromedp.CSS(`.question button`)))
	b.waitText(`.question[data-by="person"]`, "answered: the main branch")
	b.shot(shotDir(t), "desktop-question.png")
	if done := waitEnded(t, e, sa.ID); !strings.Contains(string(done.Result), "The person answered: the main branch") {
		t.Fatalf("the subagent got %s", done.Result)
	}
}
