package gateway_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/avaagent/ava/gateway/client"
)

// TestPanelLoginIsBoundToItsOrigin: the attack of issue 38 item 3. A
// page of another port of 127.0.0.1 receives the panel's session cookie
// (browsers send a host's cookies to all its ports), but replayed alone
// it opens nothing, not even from the daemon's own page without the
// login's secret. A second tab of the panel gets the login from the
// first without asking; Log out ends it for both tabs, and the cookie and
// secret together then open nothing either.
func TestPanelLoginIsBoundToItsOrigin(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: browserScript})
	var mu sync.Mutex
	var stolen []string // the Cookie headers the other port received
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		stolen = append(stolen, r.Header.Get("Cookie"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><title>elsewhere</title><p>another program on 127.0.0.1</p>"))
	}))
	t.Cleanup(evil.Close)

	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "hello"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "quick answer")
	secret := b.eval(`sessionStorage.getItem('ava.login') || ''`)
	if len(secret) < 40 || b.eval(`document.cookie`) != "" {
		t.Fatalf("the tab keeps %q and sees cookies %q, want the login's secret and no cookie", secret, b.eval(`document.cookie`))
	}
	if got := b.await(`fetch('/api/sessions').then(r => String(r.status))`); got != "401" {
		t.Fatalf("the daemon's own page without the secret: GET /api/sessions %s, want 401", got)
	}

	// Another port of the same host gets the cookie, which alone opens
	// nothing.
	b.run(chromedp.Navigate(evil.URL + "/"))
	_, port, _ := net.SplitHostPort(e.ts.Listener.Addr().String())
	mu.Lock()
	cookie := strings.Join(stolen, "; ")
	mu.Unlock()
	if !strings.Contains(cookie, "ava_session_"+port+"=") {
		t.Fatalf("the other port got cookies %q: the browser no longer sends them across ports? Then this test proves nothing", cookie)
	}
	code, body := e.do("GET", "/api/sessions", "", map[string]string{"Authorization": "", "Cookie": cookie})
	wantError(t, code, body, http.StatusUnauthorized, client.LoginHeader)
	code, _ = e.do("POST", "/api/chat", `{"message":"from elsewhere"}`, map[string]string{"Authorization": "", "Cookie": cookie})
	if code != http.StatusUnauthorized {
		t.Fatalf("a chat with the stolen cookie: %d, want 401", code)
	}

	// Back on the panel: still logged in (the secret is the tab's).
	b.run(chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "again"), chromedp.KeyEvent(kb.Enter))
	b.wait(`document.querySelectorAll('.msg.assistant').length >= 1 && !document.querySelector('.modal')`, "an answer without a login dialog")

	// A second tab gets the login from the first.
	tctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	must(t, chromedp.Do(tctx)) // opens the tab for the life of tctx, not of one step's timeout
	tab := &browser{t: t, ctx: tctx}
	tab.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	tab.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "from the second tab"), chromedp.KeyEvent(kb.Enter))
	tab.waitText(`.msg.assistant`, "quick answer")
	if tab.eval(`document.querySelector('.modal') ? 'dialog' : 'none'`) != "none" || tab.eval(`sessionStorage.getItem('ava.login')`) != secret {
		t.Fatal("the second tab asked for the token, or holds another login")
	}

	// Log out in the first tab: both tabs forget the login, and the
	// daemon refuses it.
	b.run(chromedp.Click(chromedp.CSS(`button.logout`)))
	b.waitText(`.logged-out`, "logged out")
	b.wait(`sessionStorage.getItem('ava.login') === null`, "the first tab's secret forgotten")
	tab.wait(`sessionStorage.getItem('ava.login') === null`, "the second tab's secret forgotten")
	code, _ = e.do("GET", "/api/sessions", "", map[string]string{"Authorization": "", "Cookie": cookie, client.LoginHeader: secret})
	if code != http.StatusUnauthorized {
		t.Fatalf("the cookie and the secret after logout: %d, want 401", code)
	}
	if ls, err := e.c.PanelLogins(ctx(t)); err != nil || len(ls) != 0 {
		t.Fatalf("logins after logout: %+v %v", ls, err)
	}
}

// await returns the string a JavaScript promise resolves to, failing the
// test after 15 s.
func (b *browser) await(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\n%s", expr, err, b.dump())
	}
	return v
}
