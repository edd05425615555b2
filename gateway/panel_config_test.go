package gateway_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/avaagent/ava/config"
)

// TestPanelShowsAConfigErrorUntilFixed: a reload the daemon refused (a
// bad edit) shows as a banner naming the setting, and the banner goes
// once a reload works again.
func TestPanelShowsAConfigErrorUntilFixed(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: browserScript})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	if got := b.eval(`String(!!document.querySelector('.config-banner'))`); got != "false" {
		t.Fatalf("a banner with nothing wrong: %s", got)
	}
	good := e.rt.Config()
	bad := good
	bad.MaxQueuedSubagents = 0
	if _, err := e.in.Reload(context.Background(), func() (config.Config, error) { return bad, nil }); err == nil {
		t.Fatal("max_queued_subagents: 0 reloaded")
	}
	b.wait(`document.querySelector('.config-banner')?.textContent.includes('max_queued_subagents')`, "the banner naming the setting")
	b.shot(shotDir(t), "desktop-config-error.png")
	if _, err := e.in.Reload(context.Background(), func() (config.Config, error) { return good, nil }); err != nil {
		t.Fatal(err)
	}
	b.wait(`!document.querySelector('.config-banner')`, "the banner gone once fixed")
}
