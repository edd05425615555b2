package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/internal/money"
)

// figuresScript drives TestFiguresAgreeOnEverySurface. The subagent
// (FIGTASK) answers its task, a follow-up, a slow second follow-up
// during which it is steered, and the steer (the slow turn's end makes
// it a follow-up, which is slow too), each with its usage. The main
// session (the Telegram chat) answers whatever it is sent.
const figuresScript = `conversations:
  - match: "FIGTASK"
    turns:
      - text: "first answer"
        usage: {input: 100, output: 20}
      - text: "second answer"
        usage: {input: 130, output: 30}
      - text: "third answer"
        usage: {input: 150, output: 40}
        delay: 5s
      - text: "steered answer"
        usage: {input: 170, output: 45}
        delay: 4s
  - turns:
      - text: "hello back"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
      - text: "noted"
`

// figuresPrices prices the script (cents per million tokens) so that
// costs have fractions of a cent: 100 in and 20 out cost 1.27¢.
const figuresPrices = "prices:\n  figures.yaml: {input: 10700, output: 10000}\n"

// figuresChat is the Telegram chat whose session is the parent.
const figuresChat = "ava:telegram:4242"

// TestFiguresAgreeOnEverySurface follows one subagent of a Telegram
// chat's session through its task, a follow-up, a second follow-up and
// a steer, and reads its figures from every surface while it runs and
// once it ended: `ava ps`, `ava status`, GET /api/subagents/{id} and the
// list, the panel (its list row, its timeline bar, its chat's header, the session's
// spend, in Chromium), MCP's subagent_status on the daemon's /mcp and
// Telegram's /status (while it runs: /status lists running subagents).
// Each shows the API's tokens, cost (as internal/money writes it on the
// surfaces for people, exact in JSON), iterations (where
// shown) and active time (to its printing precision), and the session's
// spend on subagents is the subagent's.
func TestFiguresAgreeOnEverySurface(t *testing.T) {
	f := newFiguresRig(t)
	f.tg.deliver("hello")
	waitFor(t, func() bool { return strings.Contains(f.tg.all(), "hello back") })

	sa, _, err := f.d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "FIGTASK: count", Model: spawnModel, Parent: figuresChat})
	if err != nil {
		t.Fatal(err)
	}
	f.id = sa.ID
	f.waitEnded(1)
	f.openPanel()
	f.checkAll("after the task", 120, 1, false)

	if r := chatText(t, f.d.c, client.ChatRequest{SessionKey: "ava:subagent:" + f.id, Message: "and more?"}); r.Text != "second answer" {
		t.Fatalf("follow-up: %+v", r)
	}
	f.waitEnded(2)
	idleFrom := time.Now()
	f.checkAll("after a follow-up", 280, 2, false)
	idle := time.Since(idleFrom)

	// A slow follow-up, steered while it runs: read while each turn runs.
	f.send(client.ChatRequest{SessionKey: "ava:subagent:" + f.id, Message: "slowly now"})
	f.waitRunning(3)
	f.send(client.ChatRequest{SessionKey: "ava:subagent:" + f.id, Message: "and steer here", Steer: true})
	f.checkAll("while a follow-up runs", 280, 3, true)
	f.waitRunning(4)
	f.checkAll("while the steer runs", 470, 4, true)
	f.waitEnded(4)
	f.checkAll("after the steer", 685, 4, false)

	// Its active time is its turns' (5 s and 4 s of scripted delay and
	// quick ones), not the idle time between them, which its wall time
	// spans.
	sa = f.api()
	if active := millis(sa.ElapsedMs); active < 9*time.Second || active > 11*time.Second || millis(sa.WallMs) < active+idle {
		f.t.Errorf("active %v, wall %v: want 9–11 s active, and at least %v idle between its turns", active, millis(sa.WallMs), idle)
	}
}

// figuresRig is the daemon, its clients and the figures' readers.
type figuresRig struct {
	t   *testing.T
	d   *daemon
	tg  *chatTelegram
	mcp *mcp.ClientSession
	br  context.Context
	id  string
}

func newFiguresRig(t *testing.T) *figuresRig {
	t.Helper()
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium on PATH: the panel's figures need it (apt-get install chromium)")
	}
	root := t.TempDir()
	script := filepath.Join(root, "figures.yaml")
	must(t, os.WriteFile(script, []byte(figuresScript), 0o600))
	data := filepath.Join(root, "data")
	operatorSubagentScript(t, data, script)
	cfg, err := os.OpenFile(filepath.Join(data, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = cfg.WriteString(figuresPrices)
	must(t, err)
	must(t, cfg.Close())
	tg := newChatTelegram(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + root,
		"AVA_MODEL=scripted/" + script, "AVA_CONFIRM=never",
		"TELEGRAM_BOT_TOKEN=1:fake", "AVA_TELEGRAM_API_URL=" + tg.URL, "AVA_TELEGRAM_ALLOWED=4242"}
	f := &figuresRig{t: t, d: startDaemon(t, env), tg: tg}
	f.mcp, err = mcp.NewClient(&mcp.Implementation{Name: "figures", Version: "v0"}, nil).Connect(bg(t),
		&mcp.StreamableClientTransport{Endpoint: "http://" + f.d.addr + "/mcp", HTTPClient: &http.Client{Transport: tokenTransport{f.d.token}}}, nil)
	must(t, err)
	t.Cleanup(func() { f.mcp.Close() })
	f.br = startChromium(t, chrome)
	return f
}

// startChromium starts a headless Chromium for the panel.
func startChromium(t *testing.T, chrome string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	return bctx
}

// api is the subagent as GET /api/subagents/{id} returns it.
func (f *figuresRig) api() client.Subagent {
	f.t.Helper()
	sa, err := f.d.c.Subagent(bg(f.t), f.id)
	must(f.t, err)
	return sa
}

// waitEnded waits until the subagent ended with iterations model calls.
func (f *figuresRig) waitEnded(iterations int) {
	f.t.Helper()
	waitFor(f.t, func() bool { sa := f.api(); return sa.Status == "success" && sa.Iteration == iterations })
}

// waitRunning waits until the subagent runs a turn in its model call
// number iterations (a running run's iterations count the call under
// way).
func (f *figuresRig) waitRunning(iterations int) {
	f.t.Helper()
	var sa client.Subagent
	ok := false
	defer func() {
		if !ok {
			f.t.Logf("last seen: %s, %d iterations", sa.Status, sa.Iteration)
		}
	}()
	waitFor(f.t, func() bool { sa = f.api(); return sa.Status == "running" && sa.Iteration == iterations })
	ok = true
}

// send sends a message to the daemon without waiting for its turn.
func (f *figuresRig) send(req client.ChatRequest) {
	f.t.Helper()
	st, err := f.d.c.Chat(bg(f.t), req)
	must(f.t, err)
	defer st.Close()
	if ev, err := st.Next(); err != nil || ev.Type != client.EventSession {
		f.t.Fatalf("%q: first event %+v %v", req.Message, ev, err)
	}
}

// shown is a subagent's figures as one surface shows them.
type shown struct {
	tokens int
	// cost is as printed; iterations -1 when the surface has none.
	cost       string
	iterations int
	elapsed    time.Duration
}

// surface reads the subagent's figures as one surface shows them.
type surface struct {
	name string
	// cost prints a cost as the surface does; prec is how precisely it
	// prints active time; stale how old its figures may be.
	cost        func(float64) string
	prec, stale time.Duration
	read        func() shown
}

// checkAll reads every surface and checks it against the API, each read
// bracketed by two reads of the API while the subagent runs.
func (f *figuresRig) checkAll(when string, tokens, iterations int, running bool) {
	f.t.Helper()
	ref := f.api()
	if ref.Tokens != tokens || ref.Iteration != iterations || ref.CostCents <= 0 {
		f.t.Fatalf("%s: the API says %d tokens, %d iterations, %v¢; want %d tokens, %d iterations", when, ref.Tokens, ref.Iteration, ref.CostCents, tokens, iterations)
	}
	if m := activityIteration.FindStringSubmatch(ref.Activity); m != nil && atoi(f.t, m[1]) != ref.Iteration {
		f.t.Errorf("%s: its activity %q counts another iteration than its %d", when, ref.Activity, ref.Iteration)
	}
	for _, s := range f.surfaces(running) {
		before := f.api()
		got := s.read()
		after := f.api()
		f.t.Logf("%s: %s shows %d tokens, %s, %d iterations, %v active (API %d, %.4f¢, %d, %v–%v)", when, s.name, got.tokens, got.cost,
			got.iterations, got.elapsed, ref.Tokens, ref.CostCents, ref.Iteration, millis(before.ElapsedMs), millis(after.ElapsedMs))
		if got.tokens != ref.Tokens || got.cost != s.cost(ref.CostCents) || (got.iterations >= 0 && got.iterations != ref.Iteration) {
			f.t.Errorf("%s: %s shows %d tokens, %s, %d iterations; the API %d tokens, %s, %d iterations", when, s.name,
				got.tokens, got.cost, got.iterations, ref.Tokens, s.cost(ref.CostCents), ref.Iteration)
		}
		lo, hi := millis(before.ElapsedMs)-s.prec/2-s.stale, millis(after.ElapsedMs)+s.prec/2
		if got.elapsed < lo || got.elapsed > hi {
			f.t.Errorf("%s: %s shows %v active; the API %v–%v", when, s.name, got.elapsed, millis(before.ElapsedMs), millis(after.ElapsedMs))
		}
	}
	if !running {
		f.checkSpend(when, ref)
	}
}

// activityIteration is an iteration count in an activity's text, which
// every surface shows beside the figures.
var activityIteration = regexp.MustCompile(`iteration (\d+)`)

func millis(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// surfaces are the readers; Telegram's /status lists running subagents,
// so once the subagent ended it is read with /status S-….
func (f *figuresRig) surfaces(running bool) []surface {
	list := []surface{
		{name: "ava ps", cost: money.Cents, prec: time.Second, read: func() shown { return f.readPs(running) }},
		{name: "ava status", cost: money.Cents, prec: time.Second, read: f.readStatus},
		{name: "the API's list", cost: exact, prec: time.Millisecond, read: f.readList},
		{name: "MCP subagent_status", cost: exact, prec: time.Millisecond, read: f.readMCP},
		{name: "the panel's list", cost: money.Cents, prec: 100 * time.Millisecond, stale: 1500 * time.Millisecond, read: f.readPanelRow},
		{name: "the panel's header", cost: money.Cents, prec: time.Second, stale: time.Hour, read: f.readPanelHeader},
	}
	tg := surface{name: "Telegram /status", cost: money.Cents,
		prec: time.Second, read: func() shown { return f.readTelegram("/status", "Session "+figuresChat) }}
	if !running {
		tg.name = "Telegram /status S-…"
		tg.read = func() shown { return f.readTelegram("/status "+f.id, "✅ "+f.id) }
	}
	return append(list, tg)
}

// exact prints a cost as a JSON number does.
func exact(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) + "¢" }

// ava runs the command line against the daemon.
func (f *figuresRig) ava(args ...string) string {
	f.t.Helper()
	cmd := exec.Command(avaBin, args...)
	cmd.Env = append(f.d.env, "AVA_ADDR="+f.d.addr)
	out, errOut, code := runCmd(f.t, cmd)
	if code != 0 {
		f.t.Fatalf("ava %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	return out
}

// readPs reads the subagent's row of `ava ps` (--all once it ended),
// checks `ava ps --json` against it and, once it ended, the session's
// spend line.
func (f *figuresRig) readPs(running bool) shown {
	f.t.Helper()
	args := []string{"ps"}
	if !running {
		args = append(args, "--all")
	}
	out := f.ava(args...)
	var s shown
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[0] != f.id {
			continue
		}
		s = shown{tokens: atoi(f.t, fields[4]), cost: fields[5], iterations: -1, elapsed: parseDuration(f.t, fields[3])}
	}
	if s.cost == "" {
		f.t.Fatalf("%s is not in ava %v:\n%s", f.id, args, out)
	}
	var list []client.Subagent
	must(f.t, json.Unmarshal([]byte(f.ava(append(args, "--json")...)), &list))
	for _, sa := range list {
		if sa.ID == f.id && (sa.Tokens != s.tokens || money.Cents(sa.CostCents) != s.cost) {
			f.t.Errorf("ava ps --json: %d tokens, %v¢; its table %d, %s", sa.Tokens, sa.CostCents, s.tokens, s.cost)
		}
	}
	if !running {
		want := fmt.Sprintf("subagents %s/%d tokens", s.cost, s.tokens)
		if !strings.Contains(out, figuresChat+": own ") || !strings.Contains(out, want) {
			f.t.Errorf("ava ps --all: no spend line of %s with %q:\n%s", figuresChat, want, out)
		}
	}
	return s
}

// statusLine is the figures' line of `ava status`.
var statusLine = regexp.MustCompile(`elapsed:\s+(\S+) · (\d+) tokens · (\S+¢) · (\d+) iterations`)

func (f *figuresRig) readStatus() shown {
	f.t.Helper()
	out := f.ava("status", f.id)
	m := statusLine.FindStringSubmatch(out)
	if m == nil {
		f.t.Fatalf("ava status %s: no figures in\n%s", f.id, out)
	}
	var js client.Subagent
	must(f.t, json.Unmarshal([]byte(f.ava("status", "--json", f.id)), &js))
	if js.Tokens != atoi(f.t, m[2]) || js.Iteration != atoi(f.t, m[4]) {
		f.t.Errorf("ava status --json: %d tokens, %d iterations; its text %s", js.Tokens, js.Iteration, m[0])
	}
	return shown{tokens: atoi(f.t, m[2]), cost: m[3], iterations: atoi(f.t, m[4]), elapsed: parseDuration(f.t, m[1])}
}

// readList reads the subagent from GET /api/subagents?parent=.
func (f *figuresRig) readList() shown {
	f.t.Helper()
	list, err := f.d.c.Subagents(bg(f.t), client.SubagentFilter{Parent: figuresChat})
	must(f.t, err)
	for _, sa := range list {
		if sa.ID == f.id {
			return shown{tokens: sa.Tokens, cost: exact(sa.CostCents), iterations: sa.Iteration, elapsed: millis(sa.ElapsedMs)}
		}
	}
	f.t.Fatalf("%s is not in the list of %s: %+v", f.id, figuresChat, list)
	return shown{}
}

// readMCP calls subagent_status on the daemon's /mcp.
func (f *figuresRig) readMCP() shown {
	f.t.Helper()
	res, err := f.mcp.CallTool(bg(f.t), &mcp.CallToolParams{Name: "subagent_status", Arguments: map[string]any{"subagent_id": f.id}})
	must(f.t, err)
	var out struct {
		Subagent struct {
			Tokens    int     `json:"tokens"`
			CostCents float64 `json:"costCents"`
			Iteration int     `json:"iteration"`
		} `json:"subagent"`
		ElapsedSeconds float64 `json:"elapsed_seconds"`
	}
	b, err := json.Marshal(res.StructuredContent)
	must(f.t, err)
	if res.IsError || json.Unmarshal(b, &out) != nil {
		f.t.Fatalf("subagent_status: %s", b)
	}
	sa := out.Subagent
	return shown{tokens: sa.Tokens, cost: exact(sa.CostCents), iterations: sa.Iteration,
		elapsed: time.Duration(math.Round(out.ElapsedSeconds*1000)) * time.Millisecond}
}

// telegramLine is a subagent's line in /status: "(3s, 470 tokens, 4.70¢)".
var telegramLine = regexp.MustCompile(`\((\S+), (\d+) tokens, (\S+¢)\)`)

// readTelegram sends the chat command and reads the subagent's line
// from the answer, which starts with prefix.
func (f *figuresRig) readTelegram(command, prefix string) shown {
	f.t.Helper()
	n := f.tg.count()
	f.tg.deliver(command)
	var line string
	waitFor(f.t, func() bool {
		for _, msg := range f.tg.since(n) {
			if !strings.HasPrefix(msg, prefix) {
				continue
			}
			for l := range strings.Lines(msg) {
				if strings.Contains(l, f.id) {
					line = l
				}
			}
			if line == "" {
				f.t.Fatalf("%s does not show %s:\n%s", command, f.id, msg)
			}
			return true
		}
		return false
	})
	m := telegramLine.FindStringSubmatch(line)
	if m == nil {
		f.t.Fatalf("/status: no figures in %q", line)
	}
	return shown{tokens: atoi(f.t, m[2]), cost: m[3], iterations: -1, elapsed: parseDuration(f.t, m[1])}
}

// openPanel logs Chromium in to the panel and opens the subagent's chat
// in the Telegram chat's session.
func (f *figuresRig) openPanel() {
	f.t.Helper()
	link, err := f.d.c.LoginLink(bg(f.t))
	must(f.t, err)
	page := fmt.Sprintf("http://%s/#s=%s&a=%s", f.d.addr, url.QueryEscape(figuresChat), f.id)
	f.browse(chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`textarea`)), chromedp.Navigate(page))
}

// browse runs browser actions, failing after 15 s.
func (f *figuresRig) browse(actions ...chromedp.Action[chromedp.Void]) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.br, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		f.t.Fatalf("browser: %v", err)
	}
}

// panelText is the text of the first element sel matches once it
// contains want (the panel reads the list once a second), or what it
// shows after 10 s.
func (f *figuresRig) panelText(sel, want string) string {
	f.t.Helper()
	expr := fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ''`, sel)
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(f.br, 5*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		cancel()
		must(f.t, err)
		if got = strings.Join(strings.Fields(v), " "); strings.Contains(got, want) {
			break
		}
	}
	return got
}

// panelRow is the list row's figures: "3.2 s · 470 tokens · 4.70¢"; the
// timeline's bar shows the same cost.
var panelRow = regexp.MustCompile(`([\d.]+) (ms|s) · (\d+) tokens · (\S+¢)`)

func (f *figuresRig) readPanelRow() shown {
	f.t.Helper()
	ref := f.api()
	text := f.panelText(fmt.Sprintf(`.subagent[data-id=%q] .row2`, f.id), fmt.Sprintf(" %d tokens", ref.Tokens))
	m := panelRow.FindStringSubmatch(text)
	if m == nil {
		f.t.Fatalf("the panel's row of %s: no figures in %q", f.id, text)
	}
	if tl := f.panelText(fmt.Sprintf(`.tl-row[data-id=%q] .tl-cost`, f.id), m[4]); tl != m[4] {
		f.t.Errorf("the panel's timeline shows %s for %s, its list %s", tl, f.id, m[4])
	}
	v := s2f(f.t, m[1])
	if m[2] == "s" {
		v *= 1000
	}
	return shown{tokens: atoi(f.t, m[3]), cost: m[4], iterations: -1, elapsed: time.Duration(math.Round(v)) * time.Millisecond}
}

// panelHeader is the subagent chat header's figures: "470 tokens · 4.70¢".
var panelHeader = regexp.MustCompile(`(\d+) tokens · (\S+¢)`)

// readPanelHeader reads the open subagent chat's header, which shows no
// active time: its elapsed is the API's, which the check allows.
func (f *figuresRig) readPanelHeader() shown {
	f.t.Helper()
	ref := f.api()
	text := f.panelText(`.chat-head small.muted`, fmt.Sprintf("%d tokens", ref.Tokens))
	m := panelHeader.FindStringSubmatch(text)
	if m == nil {
		f.t.Fatalf("the panel's header of %s: no figures in %q", f.id, text)
	}
	return shown{tokens: atoi(f.t, m[1]), cost: m[2], iterations: -1, elapsed: millis(ref.ElapsedMs)}
}

// checkSpend checks the session's spend on subagents (GET
// /api/sessions/{key}, and the panel's session header) against the
// subagent's figures.
func (f *figuresRig) checkSpend(when string, ref client.Subagent) {
	f.t.Helper()
	s, err := f.d.c.Session(bg(f.t), figuresChat)
	must(f.t, err)
	sub := s.Spend.Subagents
	if sub.Tokens != ref.Tokens || math.Abs(sub.CostCents-ref.CostCents) > 1e-9 {
		f.t.Errorf("%s: the session's spend on subagents is %d tokens, %v¢; the subagent's %d tokens, %v¢", when, sub.Tokens, sub.CostCents, ref.Tokens, ref.CostCents)
	}
	page := fmt.Sprintf("http://%s/#s=%s", f.d.addr, url.QueryEscape(figuresChat))
	f.browse(chromedp.Navigate(page))
	want := "subagents " + money.Cents(ref.CostCents)
	if got := f.panelText(`.chat-head .spend`, want); !strings.Contains(got, want) {
		f.t.Errorf("%s: the panel's session spend is %q, want %q", when, got, want)
	}
	f.browse(chromedp.Navigate(page + "&a=" + f.id))
}

// chatTelegram is a fake Bot API on loopback: it delivers the messages
// it is given, from chat 4242, one update each, and records every text
// the bot sends or edits.
type chatTelegram struct {
	*httptest.Server
	mu      sync.Mutex
	pending []string
	next    int
	sent    []string
}

func newChatTelegram(t *testing.T) *chatTelegram {
	tg := &chatTelegram{next: 1}
	tg.Server = httptest.NewServer(http.HandlerFunc(tg.serve))
	t.Cleanup(tg.Close)
	return tg
}

// deliver queues a message of the chat for the bot's next poll.
func (tg *chatTelegram) deliver(text string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.pending = append(tg.pending, text)
}

// all is every text the bot sent, joined.
func (tg *chatTelegram) all() string {
	return strings.Join(tg.since(0), "\n---\n")
}

// count is how many texts the bot sent.
func (tg *chatTelegram) count() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return len(tg.sent)
}

// since is what the bot sent after its first n texts.
func (tg *chatTelegram) since(n int) []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]string(nil), tg.sent[n:]...)
}

func (tg *chatTelegram) serve(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getUpdates":
		tg.updates(w)
	case "sendMessage", "editMessageText":
		answerSent(w, r, func(text string) int {
			tg.mu.Lock()
			defer tg.mu.Unlock()
			tg.sent = append(tg.sent, text)
			return len(tg.sent)
		})
	default:
		fmt.Fprint(w, `{"ok":true,"result":true}`)
	}
}

// updates answers getUpdates: the queued messages, or none after a short
// wait.
func (tg *chatTelegram) updates(w http.ResponseWriter) {
	tg.mu.Lock()
	texts := tg.pending
	tg.pending = nil
	first := tg.next
	tg.next += len(texts)
	tg.mu.Unlock()
	if len(texts) == 0 {
		time.Sleep(100 * time.Millisecond)
		fmt.Fprint(w, `{"ok":true,"result":[]}`)
		return
	}
	var ups []string
	for i, text := range texts {
		b, _ := json.Marshal(text)
		ups = append(ups, fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":%d,"text":%s,
			"chat":{"id":4242,"type":"private"},"from":{"id":7,"is_bot":false,"first_name":"P"}}}`, first+i, first+i, time.Now().Unix(), b))
	}
	fmt.Fprintf(w, `{"ok":true,"result":[%s]}`, strings.Join(ups, ","))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	must(t, err)
	return n
}

// s2f is a printed number ("4.70¢", "3.2") as a float.
func s2f(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "¢"), 64)
	must(t, err)
	return v
}

func parseDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	must(t, err)
	return d
}
