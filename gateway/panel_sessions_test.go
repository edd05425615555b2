package gateway_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/avaagent/ava/gateway/client"
)

// TestPanelSessionTitles: the sessions menu shows each session by its
// title (its first message) and last activity, not its raw key; a
// rename in the panel is stored and sticks after a reload; at desktop
// and phone sizes.
func TestPanelSessionTitles(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: browserScript})
	shots := shotDir(t)
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		key := "ava:web:" + size.name
		if _, _, res := e.chat(client.ChatRequest{SessionKey: key, Message: "Plan the trip to Lisbon for " + size.name + "\nwith a second line"}); res.Status != "success" {
			t.Fatalf("seed %s: %+v", key, res)
		}
		b := newBrowser(t, chrome)
		b.run(chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(e.loginURL()), chromedp.Navigate(e.ts.URL+"/#s="+url.QueryEscape(key)))
		option := fmt.Sprintf(`select.key option[value=%q]`, key)
		b.waitText(option, "Plan the trip to Lisbon for "+size.name+" · just now")
		if raw := b.eval(`[...document.querySelectorAll('select.key option')].map(o => o.textContent).filter(t => t.includes('ava:')).join('|')`); raw != "" {
			t.Fatalf("%s: the menu shows raw keys: %q", size.name, raw)
		}
		if tip := b.eval(`document.querySelector('` + option + `').title`); tip != key {
			t.Fatalf("%s: the option's tooltip %q, want the key", size.name, tip)
		}
		b.shot(shots, size.name+"-session-title.png")

		b.run(chromedp.Click(chromedp.CSS(`button.rename-btn`)))
		b.wait(`document.querySelector('.rename input')?.value === 'Plan the trip to Lisbon for `+size.name+`'`, "the title in the rename field")
		b.shot(shots, size.name+"-session-rename.png")
		renamed := "Lisbon in May (" + size.name + ")"
		b.eval(`(() => { const i = document.querySelector('.rename input'); i.select(); return ''; })()`)
		b.run(chromedp.SendKeys(chromedp.CSS(`.rename input`), renamed), chromedp.KeyEvent(kb.Enter))
		b.waitText(option, renamed+" · just now")
		got, err := e.c.Session(ctx(t), key)
		must(t, err)
		if got.Title != renamed {
			t.Fatalf("%s: stored title %q, want %q", size.name, got.Title, renamed)
		}
		b.run(chromedp.Reload())
		b.waitText(option, renamed)
		if sel := b.eval(`document.querySelector('select.key').selectedOptions[0].textContent`); !strings.HasPrefix(sel, renamed) {
			t.Fatalf("%s: after a reload the menu shows %q", size.name, sel)
		}
		b.shot(shots, size.name+"-session-renamed.png")
	}
}
