package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestPanelNewChatIsNotConnecting: a new chat has nothing to follow, so
// it shows no connection state; before, it read "connecting" forever.
// Its first message starts the session, whose stream then goes live.
func TestPanelNewChatIsNotConnecting(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: browserScript})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.Sleep(1500 * time.Millisecond)) // the time a connection would take, and more
	if got := b.eval(`[document.querySelector('.chat').dataset.conn, document.querySelector('.conn')?.textContent ?? ''].join('|')`); got != "|" {
		t.Fatalf("a new chat's connection state and indicator %q, want none", got)
	}
	b.shot(shotDir(t), "desktop-new-chat.png")
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "hello"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "quick answer")
	b.wait(`document.querySelector('.chat').dataset.conn === 'live' && !document.querySelector('.conn')`, "the started session live")
}

// TestPanelReadsStopAndUnpriced: a subagent the person stops reads
// "stopped" in its chat, the list, and its parent's completion line, with
// no "⚠ cancelled: cancelled" error line; and on a model with no known
// price (the offline one) costs read "unpriced", not 0.00¢, in the list,
// the timeline, the completion line, the header and the spend roll-up.
func TestPanelReadsStopAndUnpriced(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: browserScript})
	b := newBrowser(t, chrome)
	shots := shotDir(t)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "SPAWNBG please"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "parent done")
	b.wait(`document.querySelector('.subagent[data-status="running"]')`, "the subagent running")

	b.run(chromedp.Click(chromedp.CSS(`.subagent`)))
	b.waitText(`.typing`, "is working")
	b.run(chromedp.Click(chromedp.CSS(`button.stop`)))
	b.waitText(`.line.end`, "— stopped —")
	b.waitText(`.chat-head .pill`, "stopped")
	b.waitText(`.subagent[data-status="cancelled"] .pill`, "stopped")
	if row := b.eval(`document.querySelector('.subagent .row3').textContent`); row != "BLOCKTASK child" {
		t.Fatalf("the stopped subagent's row reads %q, want its task", row)
	}
	if errs := b.texts(`.line.error`); len(errs) > 0 {
		t.Fatalf("the stopped subagent's chat shows error lines %q", errs)
	}
	b.shot(shots, "desktop-stopped-subagent.png")

	b.run(chromedp.Click(chromedp.CSS(`button.back`)))
	b.waitText(`.line.complete`, "stopped")
	complete := b.eval(`document.querySelector('.line.complete').textContent`)
	if !strings.Contains(complete, "■") || strings.Contains(complete, "cancelled") {
		t.Fatalf("the parent's completion line %q, want ■ … stopped", complete)
	}
	if !strings.Contains(complete, "unpriced") || strings.Contains(complete, "¢") {
		t.Fatalf("the completion line on an unpriced model: %q", complete)
	}
	b.waitText(`.subagent .row2`, "unpriced")
	b.waitText(`.tl-cost`, "unpriced")
	b.waitText(`.chat-head .spend`, "total unpriced")
	if spend := b.eval(`document.querySelector('.chat-head').textContent`); strings.Contains(spend, "¢") {
		t.Fatalf("the header on an unpriced model: %q", spend)
	}
	if side := b.eval(`document.querySelector('.side').textContent`); strings.Contains(side, "0.00¢") {
		t.Fatalf("the list on an unpriced model: %q", side)
	}
	b.shot(shots, "desktop-unpriced.png")
	b.checkCostWords()
}

// checkCostWords checks format.js's cost words on priced and unpriced
// figures, in the page as the panel loads them.
func (b *browser) checkCostWords() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`import('/format.js').then(f => [
		f.cost(0, 0), f.cost(0.42, 100), f.cost(0, 100), f.cost(0.42, 100, true), f.cost(250, 10),
		f.totalCost({costCents: 1.2, tokens: 300}, [{model: 'a', costCents: 1.2, tokens: 100}, {model: 'b', costCents: 0, tokens: 200}]),
		f.totalCost({costCents: 1.2, tokens: 300}, [{model: 'a', costCents: 1.2, tokens: 300}]),
		f.totalCost({costCents: 0, tokens: 300}, [{model: 'b', costCents: 0, tokens: 300}]),
		f.statusLabel('cancelled'), f.statusLabel('timeout')])`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("format.js: %v", err)
	}
	want := []string{"0¢", "0.42¢", "unpriced", "0.42¢ + unpriced", "$2.50", "1.20¢ + unpriced", "1.20¢", "unpriced", "stopped", "timeout"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		b.t.Fatalf("format.js cost words %q, want %q", got, want)
	}
}
