package gateway_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/avaagent/ava/gateway/client"
)

// boardScript: the orchestrator spawns a parallel group of two; the
// first member posts a finding, the second reads the board.
const boardScript = `conversations:
  - match: "board alpha"
    turns:
      - tool_calls: [{name: post_finding, args: {text: "the pricing page lists three tiers (BOARD-FINDING)"}}]
      - text: "alpha done"
  - match: "board beta"
    turns:
      - tool_calls: [{name: read_findings, args: {}}]
      - text: "beta done"
  - match: "BOARDGROUP"
    turns:
      - tool_calls:
          - name: spawn_subagents
            args: {mode: parallel, tasks: [{role: researcher, task: "board alpha", model: "MODEL"}, {role: researcher, task: "board beta", model: "MODEL"}]}
      - text: "group done"
  - turns:
      - text: "hello back"
`

const boardFinding = "the pricing page lists three tiers (BOARD-FINDING)"

// groupOf runs the group through a chat and returns the session, its
// group's ID and its members.
func groupOf(t *testing.T, e *env, key string) (string, []client.Subagent) {
	t.Helper()
	list, err := e.c.Subagents(ctx(t), client.SubagentFilter{Parent: key})
	must(t, err)
	if len(list) != 2 || list[0].GroupID == "" || list[0].GroupID != list[1].GroupID {
		t.Fatalf("subagents %+v: want two of one group", list)
	}
	return list[0].GroupID, list
}

// TestFindingsAPI: GET /api/groups/{id}/findings answers the group's
// board, attributed, as the OpenAPI document says; a subagent carries
// its group's ID.
func TestFindingsAPI(t *testing.T) {
	e := newEnv(t, envOptions{script: boardScript})
	const key = "ava:findings:api"
	if _, _, res := e.chat(client.ChatRequest{SessionKey: key, Message: "BOARDGROUP please"}); res.Text != "group done" {
		t.Fatalf("turn: %+v", res)
	}
	group, members := groupOf(t, e, key)
	fs, err := e.c.Findings(ctx(t), group)
	must(t, err)
	var alpha string
	for _, m := range members {
		if strings.Contains(m.Task, "board alpha") {
			alpha = m.ID
		}
	}
	if len(fs) != 1 || fs[0].Text != boardFinding || fs[0].SubagentID != alpha || fs[0].Role != "researcher" || fs[0].ID == 0 || fs[0].PostedAt.IsZero() {
		t.Fatalf("findings %+v (alpha %s)", fs, alpha)
	}
	doc, _ := fetchOpenAPI(t, e)
	v := newSchemaValidator(t, doc)
	code, body := e.do("GET", "/api/groups/"+group+"/findings", "", nil)
	if code != 200 {
		t.Fatalf("GET findings: %d %s", code, body)
	}
	v.check("FindingList", []byte(body))
	if code, body := e.do("GET", "/api/groups/nosuch/findings", "", nil); code != 200 || !strings.Contains(body, `"findings":[]`) {
		t.Fatalf("an unknown group: %d %s", code, body)
	}
	_, body = e.do("GET", "/api/subagents/"+alpha, "", nil)
	v.check("Subagent", []byte(body))
}

// TestPanelShowsTheBoard drives the panel in Chromium: a message that
// spawns a parallel group shows the group's board in the side pane with
// the finding its first member posted, attributed.
func TestPanelShowsTheBoard(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: boardScript})
	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "BOARDGROUP please"), chromedp.KeyEvent(kb.Enter))
	b.waitText(`.msg.assistant`, "group done")
	b.waitText(`.board .finding .text`, boardFinding)
	key := b.eval(`new URLSearchParams(location.hash.slice(1)).get('s')`)
	group, members := groupOf(t, e, key)
	if got := b.eval(`document.querySelector('.board').dataset.group`); got != group {
		t.Fatalf("board of group %q, want %q", got, group)
	}
	meta := b.eval(`document.querySelector('.board .finding .meta').textContent`)
	if !strings.Contains(meta, "researcher") || !strings.Contains(b.eval(`document.querySelector('.board h3').textContent`), "Parallel group of 2") {
		t.Fatalf("finding meta %q", meta)
	}
	found := false
	for _, m := range members {
		found = found || strings.Contains(meta, m.ID)
	}
	if !found {
		t.Fatalf("finding meta %q names no member of %+v", meta, members)
	}
	b.shot(shotDir(t), "desktop-board.png")

	// The poster's own chat shows the post as a line of its stream.
	b.run(chromedp.Click(chromedp.CSS(`.board .finding button.poster`)))
	b.wait(`document.querySelector('.chat')?.dataset.session.startsWith('ava:subagent:')`, "the poster's chat")
	b.waitText(`.line.finding`, boardFinding)
	b.checkRendered(e, b.eval(`document.querySelector('.chat').dataset.session`))
	b.shot(shotDir(t), "desktop-poster.png")
}
