package gateway_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// sourcesScript: the orchestrator starts a researcher whose answer cites
// a page, as the provider's web search lets it.
var sourcesScript = `conversations:
  - match: "CITETASK"
    turns:
      - text: "about $0.006 a minute"
        citations: [{url: "https://example.com/pricing", title: "Transcription pricing", cited_text: "$0.006 per minute"},
                    {url: "javascript:alert(1)", title: "not a link"}]
  - match: "CITE"
    turns:
      - text: "asking a researcher"
        tool_calls:
          - {name: spawn_subagent, args: {role: researcher, task: "CITETASK pricing", model: "MODEL"}}
      - text: "done"
`

// TestPanelShowsSources: a completed subagent's citations show under its
// completion line as links in their own element, opening in a new tab;
// a URL that is not http(s) is not a link.
func TestPanelShowsSources(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: sourcesScript})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "CITE please"), chromedp.KeyEvent(kb.Enter))
	b.wait(`document.querySelector('.messages [data-kind="sources"] a[href="https://example.com/pricing"]')`, "the source link")
	got := evalAs[map[string]string](b, `(() => {
		const ol = document.querySelector('.messages [data-kind="sources"]');
		const a = ol.querySelector('a');
		return {text: [...ol.querySelectorAll('li')].map(li => li.textContent.replace(/\s+/g, ' ').trim()).join(' | '), target: a.target, rel: a.rel, links: String(ol.querySelectorAll('a').length),
			prev: ol.previousElementSibling ? ol.previousElementSibling.dataset.kind : ''};
	})()`)
	if got["target"] != "_blank" || got["rel"] != "noopener noreferrer nofollow" || got["links"] != "1" || got["prev"] != "complete" {
		t.Errorf("sources element: %v", got)
	}
	if want := `Transcription pricing — “$0.006 per minute” | not a link`; got["text"] != want {
		t.Errorf("sources text = %q, want %q", got["text"], want)
	}
}
