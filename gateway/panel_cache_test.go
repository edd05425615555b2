package gateway_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestPanelShowsCachedTokens: a turn whose tokens were read from the
// provider's prompt cache says how many in the chat's header, beside
// the model and the spend.
func TestPanelShowsCachedTokens(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: "turns:\n  - text: \"cached answer\"\n    usage: {input: 10, output: 5, cache_read: 900, cache_write: 100}\n"})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "hello"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "cached answer")
	b.waitText(`.chat-head`, "900 cached")
}
