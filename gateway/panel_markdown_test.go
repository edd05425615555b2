package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// markdownAnswer is a model's answer with the Markdown the panel renders
// (a table, a code fence with a line wider than a phone, a list, a safe
// link) and what it must not let through: raw HTML that would run script,
// a javascript: link, a data: link and a remote image.
const markdownAnswer = `## Results

| role | status | note |
|:-----|:------:|-----:|
| researcher | success | a wide column of text that needs room on a phone |
| coder | error | **failed** |

` + "```go" + `
func main() { fmt.Println("a line of code much wider than a phone's screen, which scrolls sideways") }
` + "```" + `

- first *item*
- second with ` + "`code`" + `
  1. nested one

<img src=x onerror="window.__pwned='img'">
<script>window.__pwned='script'</script>
[run me](javascript:window.__pwned='link') and [data](data:text/html,<script>alert(1)</script>)
![a remote picture](https://remote.example/img.png) and [a safe link](https://example.com/docs)
`

// markdownScript answers MARKDOWN with markdownAnswer, after some
// thinking that stays folded.
var markdownScript = "conversations:\n  - match: \"MARKDOWN\"\n    turns:\n      - thinking: \"private *reasoning*\"\n        text: |\n" +
	indent(markdownAnswer, "          ")

// indent prefixes every line of s with pre.
func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pre) + "\n"
}

// cspWatch records the page's Content-Security-Policy violations and
// whether any injected script ran, from before the panel's own scripts.
const cspWatch = `window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`

// onNewDocument runs src in every document the tab opens, first.
func onNewDocument(src string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
		return chromedp.Void{}, err
	}
}

// TestPanelRendersMarkdownSafely: an answer's Markdown shows as a table,
// a code block, lists and a link, at desktop and phone sizes, with wide
// code and tables scrolling inside the message; the model's raw HTML is
// text, its javascript: and data: links are not links, its remote image
// is a link (nothing is loaded), no script runs and the CSP refuses
// nothing; the thinking stays folded. Before, the answer showed raw.
func TestPanelRendersMarkdownSafely(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: markdownScript})
	b := newBrowser(t, chrome)
	shots := shotDir(t)
	b.run(onNewDocument(cspWatch), chromedp.EmulateViewport(1280, 900), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "MARKDOWN please"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "a safe link")
	b.wait(`document.querySelector('.msg.assistant table')`, "a rendered table")

	b.checkMarkdownElements()
	b.checkNothingUnsafe()
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		b.run(chromedp.EmulateViewport(size.w, size.h))
		b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('.msg.assistant').scrollIntoView({block: 'start'})`))
		b.shot(shots, size.name+"-markdown.png")
		if bad := b.overflowing(); len(bad) > 0 {
			t.Errorf("%s: wider than the message: %s", size.name, strings.Join(bad, "; "))
		}
	}
	if got := b.eval(`(p => p.scrollWidth > p.clientWidth ? 'scrolls' : 'fits')(document.querySelector('.msg.assistant pre'))`); got != "scrolls" {
		t.Errorf("phone: the wide code block %s; want it to scroll sideways", got)
	}
	b.checkNothingUnsafe()
}

// checkMarkdownElements checks the rendered answer's elements.
func (b *browser) checkMarkdownElements() {
	b.t.Helper()
	checks := []struct{ expr, want string }{
		{`document.querySelectorAll('.msg.assistant table th').length`, "3"},
		{`document.querySelectorAll('.msg.assistant table tbody tr').length`, "2"},
		{`document.querySelector('.msg.assistant table td.md-right') ? 'aligned' : 'not aligned'`, "aligned"},
		{`document.querySelector('.msg.assistant td strong').textContent`, "failed"},
		{`document.querySelector('.msg.assistant pre code.language-go').textContent.includes('func main()')`, "true"},
		{`document.querySelectorAll('.msg.assistant ul > li').length`, "2"},
		{`document.querySelectorAll('.msg.assistant ul ol > li').length`, "1"},
		{`document.querySelector('.msg.assistant li em').textContent`, "item"},
		{`document.querySelector('.msg.assistant h2').textContent`, "Results"},
		{`document.querySelector('.msg.assistant a[href="https://example.com/docs"]').rel`, "noopener noreferrer nofollow"},
		{`document.querySelector('.msg.assistant a.md-image').href`, "https://remote.example/img.png"},
		// The raw HTML is shown as the text it is.
		{`document.querySelector('.msg.assistant').textContent.includes('<img src=x onerror=')`, "true"},
		{`document.querySelector('.msg.assistant').textContent.includes('<script>window.__pwned')`, "true"},
		// The thinking is there, folded.
		{`(d => d ? String(d.open) : 'none')(document.querySelector('.messages details.thinking'))`, "false"},
		{`document.querySelector('.messages details.thinking pre').textContent`, "private *reasoning*"},
	}
	for _, c := range checks {
		if got := fmt.Sprint(evalAs[any](b, `String(`+c.expr+`)`)); got != c.want {
			b.t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
}

// checkNothingUnsafe checks that none of the model's attempts made an
// element, ran, loaded or tripped the CSP.
func (b *browser) checkNothingUnsafe() {
	b.t.Helper()
	checks := []struct{ expr, want string }{
		{`window.__pwned === undefined ? 'none' : window.__pwned`, "none"},
		{`document.querySelectorAll('.messages img, .messages script, .messages iframe, .messages object').length`, "0"},
		{`[...document.querySelectorAll('*')].filter(el => [...el.attributes].some(a => a.name.startsWith('on'))).length`, "0"},
		{`[...document.querySelectorAll('.messages a')].filter(a => !/^(https?:|mailto:)/.test(a.getAttribute('href'))).map(a => a.getAttribute('href')).join(' ')`, ""},
		{`[...document.querySelectorAll('.messages [style]')].length`, "0"},
		{`window.__csp.join('; ')`, ""},
		{`performance.getEntriesByType('resource').filter(r => !r.name.startsWith(location.origin)).map(r => r.name).join(' ')`, ""},
	}
	for _, c := range checks {
		if got := fmt.Sprint(evalAs[any](b, `String(`+c.expr+`)`)); got != c.want {
			b.t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
}

// overflowing lists the answer's blocks whose right edge passes the
// message's, and says so when the chat itself scrolls sideways.
func (b *browser) overflowing() []string {
	b.t.Helper()
	return evalAs[[]string](b, `(() => {
		const m = document.querySelector('.msg.assistant');
		const right = m.getBoundingClientRect().right + 0.5;
		const bad = [...m.children].filter(el => el.getBoundingClientRect().right > right).map(el => el.tagName + ' ' + el.className);
		const list = document.querySelector('.messages');
		if (list.scrollWidth > list.clientWidth + 1) bad.push('the chat scrolls sideways: ' + list.scrollWidth + ' > ' + list.clientWidth);
		return bad;
	})()`)
}
