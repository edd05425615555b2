package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// linesScript makes a chat taller than any window out of every kind of
// line the panel shows: tool lines, two subagents that start and
// complete, a long answer, then a turn whose model call fails (an error
// line and an end line).
var linesScript = `conversations:
  - match: "CHILDTASK"
    turns:
      - text: "child result"
  - match: "LINES"
    turns:
      - text: "working"
        tool_calls:
          - {name: list_subagents, args: {all: true}}
          - {name: list_subagents, args: {all: true}}
          - {name: list_subagents, args: {all: true}}
          - {name: list_subagents, args: {all: true}}
          - {name: list_subagents, args: {all: true}}
          - {name: list_subagents, args: {all: true}}
          - {name: spawn_subagent, args: {role: researcher, task: "CHILDTASK one", model: "MODEL"}}
          - {name: spawn_subagent, args: {role: researcher, task: "CHILDTASK two", model: "MODEL"}}
      - text: "` + strings.Repeat(`A long answer line that fills the chat.\n`, 40) + `"
      - error: "the model broke"
`

// TestPanelLinesKeepTheirHeight: once the chat is taller than the window,
// every line (tool, "↳ started", "✓ complete", error, end) keeps at least
// its text's line height, at desktop and phone sizes; before, the
// scrolling flex column squeezed them to a few pixels.
func TestPanelLinesKeepTheirHeight(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: linesScript})
	b := newBrowser(t, chrome)
	shots := shotDir(t)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "LINES please"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "fills the chat")
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "and again"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.line.end`, "error")
	for _, kind := range []string{"tool", "spawn", "complete", "error", "end"} {
		b.wait(fmt.Sprintf(`document.querySelector('.messages [data-kind=%q]')`, kind), "a "+kind+" line")
	}
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		b.run(chromedp.EmulateViewport(size.w, size.h))
		b.wait(`(m => m.scrollHeight > m.clientHeight + 200)(document.querySelector('.messages'))`, "the chat taller than the window")
		if bad := b.squeezedLines(); len(bad) > 0 {
			b.shot(shots, size.name+"-lines.png")
			t.Fatalf("%s: lines shorter than their text: %s", size.name, strings.Join(bad, "; "))
		}
		// The top of the chat, where the lines are, and its bottom.
		b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('.messages').scrollTop = 0`))
		b.shot(shots, size.name+"-lines-top.png")
		b.run(chromedp.Evaluate[chromedp.Void](`(m => m.scrollTop = m.scrollHeight)(document.querySelector('.messages'))`))
		b.shot(shots, size.name+"-lines-bottom.png")
	}
}

// squeezedLines lists the chat's items (and their status lines) whose
// height is under their text's line height.
func (b *browser) squeezedLines() []string {
	b.t.Helper()
	return evalAs[[]string](b, `[...document.querySelectorAll('.messages > *')].flatMap(el => {
		const cs = getComputedStyle(el);
		const lh = parseFloat(cs.lineHeight) || 1.2 * parseFloat(cs.fontSize);
		const hgt = el.getBoundingClientRect().height;
		return hgt + 0.5 < lh ? [(el.dataset.kind || el.className) + ' ' + hgt.toFixed(1) + 'px < ' + lh.toFixed(1) + 'px: ' + el.textContent.trim().slice(0, 40)] : [];
	})`)
}
