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

// processScript has the orchestrator run a command that declares a
// 90-second timeout (a proposal of kind process under policy always),
// then say what it printed.
const processScript = `conversations:
  - replies:
      - when: {result: {}}
        text: "The command said: {{last_result}}"
      - tool_calls: [{name: run_bash, args: {command: "echo PANEL_RAN", timeout_seconds: 90}}]
`

// TestPanelProcessProposal: a long run_bash of the turn's is shown as
// what it is, in the card and in the bar ("run_bash: `echo PANEL_RAN` —
// estimated 90 s"), not as a spawn of a role named run_bash; "yes" typed
// in the message box while the turn waits runs it and the turn answers
// with its output; the card's No runs nothing.
func TestPanelProcessProposal(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: processScript, confirm: "always"})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "build it"), chromedp.KeyEvent(kb.Enter))
	const shown = `(() => {
		const card = document.querySelector('.proposal[data-proposal-kind="process"]:not([data-decision="confirmed"]):not([data-decision="rejected"])');
		const bar = document.querySelector('.pending-bar .pending-spawn[data-proposal-kind="process"]');
		const line = 'run_bash: echo PANEL_RAN — estimated 90 s';
		return !!card && !!bar && card.querySelector('.process-line').textContent === line &&
			bar.querySelector('.process-line').textContent === line &&
			document.querySelector('.pending-bar small').textContent === 'A command awaits your answer' &&
			card.querySelector('pre').textContent.includes('it declares a 90 s timeout') &&
			!card.textContent.includes('Spawn') && !bar.textContent.includes('≤') &&
			!!card.querySelector('button.yes') && !!bar.querySelector('button.no');
	})()`
	b.wait(shown, "the process proposal as what it is, in the card and the bar")
	b.shot(shotDir(t), "desktop-process-proposal.png")
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "yes"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "The command said:")
	b.waitText(`.msg.assistant`, "PANEL_RAN")
	b.wait(`!document.querySelector('.pending-bar') &&
		document.querySelector('.proposal[data-proposal-kind="process"][data-decision="confirmed"] p.muted').textContent === 'confirmed: running it'`,
		"the card says it runs, the bar is gone")
	b.shot(shotDir(t), "desktop-process-ran.png")

	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "build it again"), chromedp.KeyEvent(kb.Enter))
	b.wait(shown, "the second process proposal")
	b.run(chromedp.Click(`.proposal[data-proposal-kind="process"]:not([data-decision]) button.no, .proposal[data-proposal-kind="process"][data-decision=""] button.no`))
	b.wait(`document.querySelectorAll('.proposal[data-proposal-kind="process"][data-decision="rejected"]').length === 1 &&
		document.querySelector('.proposal[data-decision="rejected"] p.muted').textContent === 'rejected: nothing was run'`, "the card says nothing was run")
	b.waitText(`.msg.assistant`, "declined")
}
