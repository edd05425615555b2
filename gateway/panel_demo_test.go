package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestPanelOfflineDemoTellsTheTruth: the built-in offline demo in the
// panel, under the default policy: the first answer says a subagent was
// proposed and nothing ran, with Yes in sight above the input; after Yes
// the subagent runs, and its real result is reported by itself, with no
// second message from the person.
func TestPanelOfflineDemoTellsTheTruth(t *testing.T) {
	chrome := findChromium(t)
	demo, err := os.ReadFile(filepath.Join("..", "llm", "scripted", "scripts", "demo.yaml"))
	must(t, err)
	e := newEnv(t, envOptions{script: string(demo), confirm: "always"})
	shots := shotDir(t)
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "hello"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "I proposed a researcher subagent (P-")
	b.wait(`document.querySelector('.pending-bar .pending-spawn button.yes')`, "Yes above the input")
	if said := b.eval(`[...document.querySelectorAll('.msg.assistant')].map(m => m.textContent).join('\n')`); strings.Contains(said, "finished") || strings.Contains(said, "Its summary") {
		t.Fatalf("the first answer claims a result:\n%s", said)
	}
	b.shot(shots, "desktop-demo-proposed.png")
	b.run(chromedp.Click(chromedp.CSS(`.pending-bar .pending-spawn button.yes`)))
	b.wait(`document.querySelector('.subagent[data-status="success"]')`, "the researcher run to success")
	// The report arrives by itself: no second message (issue 40).
	b.waitText(`.msg.assistant`, "you confirmed has finished with status success")
	b.waitText(`.msg.assistant`, "The offline demo subagent ran and returned a structured result.")
	b.shot(shots, "desktop-demo-reported.png")
	b.run(chromedp.EmulateViewport(390, 844))
	b.shot(shots, "phone-demo-reported.png")
}
