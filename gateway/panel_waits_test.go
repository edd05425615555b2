package gateway_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/avaagent/ava/gateway/client"
)

// TestPanelTimelineShowsWaitsAndOneDuration: the timeline marks the time
// a subagent waited for the person (open while it waits, then from the
// question to the answer), and the list and the completion line show the
// same duration; at desktop and phone sizes.
func TestPanelTimelineShowsWaitsAndOneDuration(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: askScript, roles: map[string]string{"asker.md": askerRole}})
	_, _, res := e.chat(client.ChatRequest{Message: "hello"})
	sa, _, err := e.c.Spawn(ctx(t), client.SpawnRequest{Role: "asker", Task: "ASK and show the wait", Model: spawnModel, Parent: res.Session})
	must(t, err)
	shots := shotDir(t)
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.Navigate(e.ts.URL+"/#s="+url.QueryEscape(res.Session)))
	q := waitQuestion(t, e, res.Session)
	mark := fmt.Sprintf(`.tl-row[data-id=%q] .tl-wait[data-question=%q]`, sa.ID, q.ID)
	b.wait(`document.querySelector('`+mark+`.open')`, "an open wait mark while the subagent waits")
	b.run(chromedp.Sleep(800 * time.Millisecond))
	b.shot(shots, "desktop-timeline-waiting.png")
	_, err = e.c.Answer(ctx(t), q.ID, client.AnswerRequest{Answer: "main"})
	must(t, err)
	waitEnded(t, e, sa.ID)
	b.wait(`document.querySelector('`+mark+`:not(.open)') && document.querySelector('.line.complete')`, "the closed wait mark and the completion line")
	if title := b.eval(`document.querySelector('` + mark + `').title`); !strings.Contains(title, "waited for you") || !strings.Contains(title, "you answered") {
		t.Fatalf("the wait mark's title %q", title)
	}
	if w := evalAs[float64](b, `document.querySelector('`+mark+`').getBoundingClientRect().width`); w < 20 {
		t.Fatalf("the wait mark is %.1f px wide: it waited most of the run", w)
	}
	if legend := b.eval(`document.querySelector('.tl-legend')?.textContent ?? ''`); !strings.Contains(legend, "waited for you") {
		t.Fatalf("legend %q", legend)
	}
	b.wait(`document.querySelector('.subagent[data-status="success"]')`, "the list updated")
	list := b.eval(`document.querySelector('.subagent .row2').textContent.split(' · ')[0]`)
	complete := b.eval(`document.querySelector('.line.complete').textContent.split(' · ')[1]`)
	if list == "" || list != complete {
		t.Fatalf("the list says %q, the completion line %q", list, complete)
	}
	b.shot(shots, "desktop-timeline-waited.png")
	b.run(chromedp.EmulateViewport(390, 844))
	b.run(chromedp.Click(chromedp.CSS(`nav.tabs button:nth-child(2)`)))
	b.wait(`document.querySelector('`+mark+`').getBoundingClientRect().width > 5`, "the wait mark on a phone")
	b.shot(shots, "phone-timeline-waited.png")
}
