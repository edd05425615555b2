package gateway_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/avaagent/ava/gateway/client"
)

// TestPanelAfterARestartAndAUsedLink (issue 42 item 6): the spent login
// link opened again in a browser that is logged in (a new tab, or the
// same tab) just shows the panel; in a browser with no login it is a
// page that says what to do, never the daemon's raw answer. A message
// sent while the daemon does not answer (a restart) says it was not
// sent and is sent again by a button, once the daemon is back.
func TestPanelAfterARestartAndAUsedLink(t *testing.T) {
	chrome := findChromium(t)
	var down atomic.Bool // while set, POST /api/chat gets no answer, as while the daemon restarts
	e := newEnv(t, envOptions{script: browserScript, wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() && r.Method == http.MethodPost && r.URL.Path == "/api/chat" {
				dropConnection(w)
				return
			}
			next.ServeHTTP(w, r)
		})
	}})
	shots := shotDir(t)
	link := e.loginURL()
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "hello"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "quick answer")

	// The spent link again, in a new tab of the same browser: the panel.
	tctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	must(t, chromedp.Do(tctx))
	tab := &browser{t: t, ctx: tctx}
	tab.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	tab.wait(`!document.querySelector('.modal') && !document.querySelector('.link-spent') && !location.hash.includes('login=')`, "the panel, with no dialog and no code in the address")
	// And in the same tab (only the address's fragment changes).
	b.run(chromedp.Navigate(link))
	b.wait(`!location.hash.includes('login=')`, "the code out of the address bar")
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "again"), chromedp.KeyEvent(kb.Enter))
	b.wait(`document.querySelectorAll('.msg.assistant').length >= 1 && !document.querySelector('.modal') && !document.querySelector('.link-spent')`, "still logged in")

	// A browser with no login: what to do, in words.
	other := newBrowser(t, chrome)
	other.run(chromedp.EmulateViewport(390, 844), chromedp.Navigate(link))
	other.waitText(`.link-spent`, "run ava panel where Ava runs")
	if body := other.eval(`document.body.innerText`); strings.Contains(body, `{"error"`) {
		t.Fatalf("the spent link shows raw JSON: %q", body)
	}
	other.shot(shots, "phone-link-spent.png")
	other.run(chromedp.Click(chromedp.CSS(`.link-spent button`)))
	other.wait(`document.querySelector('textarea')`, "the panel, to log in with the token")

	// The daemon does not answer: the message is kept and sent again.
	b.run(chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	down.Store(true)
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "are you there"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.not-sent`, "Your message was not sent")
	if got := b.eval(`document.querySelector('.composer').textContent`); strings.Contains(got, "Failed to fetch") {
		t.Fatalf("the composer shows the browser's words: %q", got)
	}
	b.shot(shots, "desktop-not-sent.png")
	down.Store(false)
	b.run(chromedp.Click(chromedp.CSS(`.not-sent button.resend`)))
	b.waitText(`.msg.user`, "are you there")
	b.wait(`!document.querySelector('.not-sent')`, "the notice gone once sent")
	b.waitText(`.msg.assistant`, "quick answer")
}

// TestPanelTaskProposalAndMenu (issue 42 item 6): a confirmed proposal's
// "started S-…" opens that subagent, whose own view shows the task Ava
// gave it as the task, not as the person's message; the session menu
// tells apart two sessions with the same title; and at a phone's width
// neither header is cut off.
func TestPanelTaskProposalAndMenu(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: confirmScript, confirm: "always"})
	shots := shotDir(t)
	for range 2 { // two sessions titled alike, a moment apart
		_, _, _ = e.chat(client.ChatRequest{Message: "hello"})
	}
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	labels := b.texts(`select.key option`)
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l] {
			t.Fatalf("the session menu has two entries %q: %q", l, labels)
		}
		seen[l] = true
	}
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "research this"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "waiting for you")
	b.run(chromedp.Click(chromedp.CSS(`.proposal[data-decision=""] button.yes`)))
	b.wait(`document.querySelector('.proposal[data-decision="confirmed"] a.open-sub')`, "the started subagent as a link")
	id := b.eval(`document.querySelector('.proposal[data-decision="confirmed"] a.open-sub').textContent`)
	b.run(chromedp.Click(chromedp.CSS(`.proposal[data-decision="confirmed"] a.open-sub`)))
	b.wait(`document.querySelector('.chat')?.dataset.session === 'ava:subagent:`+id+`'`, "the subagent's own view")
	b.waitText(`.msg.task`, "look around")
	if got := b.eval(`document.querySelector('.msg.task .label').textContent`); got != "Task from Ava" {
		t.Fatalf("the task's label %q", got)
	}
	if n := b.eval(`String(document.querySelectorAll('.msg.user').length)`); n != "0" {
		t.Fatalf("%s messages shown as the person's in a subagent that only got its task", n)
	}
	b.waitText(`.msg.assistant`, "subagent answer")
	b.shot(shots, "desktop-subagent-task.png")

	b.run(chromedp.EmulateViewport(390, 844))
	b.run(chromedp.Click(chromedp.CSS(`button.back`)))
	b.waitText(`.chat-head .spend`, "total")
	b.shot(shots, "phone-header.png")
	if cut := b.eval(`[...document.querySelectorAll('header.top *, .chat-head *')].filter((el) => {
		const r = el.getBoundingClientRect();
		return r.width > 0 && (r.right > innerWidth + 0.5 || r.left < -0.5 || el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflow === 'hidden');
	}).map((el) => el.className || el.tagName).join(', ')`); cut != "" {
		t.Fatalf("at a phone's width the header cuts off: %s", cut)
	}
}
