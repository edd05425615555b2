package gateway_test

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestPanelPendingBarAndYesForAll: a turn that proposes two spawns shows
// both above the input (role, task, estimate, Yes / No), also after a
// reload; typing "yes" starts both: the bar empties and both subagents
// appear in the list.
func TestPanelPendingBarAndYesForAll(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: confirmScript, confirm: "always"})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "research this"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "waiting for you")
	const bar = `[...document.querySelectorAll('.pending-bar + .composer, .pending-bar')].length === 2 &&
		document.querySelectorAll('.pending-bar .pending-spawn').length === 2 &&
		[...document.querySelectorAll('.pending-bar .pending-spawn')].every((el) =>
			el.textContent.includes('researcher') && el.textContent.includes('look around') && el.textContent.includes('≤') &&
			el.querySelector('button.yes') && el.querySelector('button.no'))`
	b.wait(bar, "both proposals in the bar above the input")
	ps := pendingOf(t, e, "")
	if len(ps) != 2 {
		t.Fatalf("%d pending", len(ps))
	}
	b.run(chromedp.Navigate(e.ts.URL+"/#s="+url.QueryEscape(ps[0].SessionKey)), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.wait(bar, "both proposals in the bar after a reload")
	b.shot(shotDir(t), "desktop-pending-bar.png")
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "yes"), chromedp.KeyEvent(kb.Enter))
	b.wait(`!document.querySelector('.pending-bar') && document.querySelectorAll('.proposal[data-decision="confirmed"]').length === 2`, "both proposals confirmed, the bar gone")
	b.wait(`document.querySelectorAll('.subagent').length === 2`, "both subagents in the list")
	if n := len(pendingOf(t, e, "")); n != 0 {
		t.Fatalf("%d proposals still pending", n)
	}
}
