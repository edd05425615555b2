package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/gateway/client"
)

// Planted secrets (made up): a GitHub token any pattern knows, the value
// of a secret-named variable no pattern knows, and Ava's own provider
// key in a form no pattern knows either.
const (
	leakGitHub   = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	leakEnvValue = "opensesame-99-value"
	leakProvider = "ava-own-provider-key-7f3a2b9c1d"
)

var leaked = []string{leakGitHub, leakEnvValue, leakProvider}

// leakScript: a READSECRET subagent reads creds.txt and answers with
// what it read; a BLOCKSECRET one reads it and then blocks until
// stopped; the orchestrator quotes the secrets in its answer.
const leakScript = `conversations:
  - match: "BLOCKSECRET"
    turns:
      - tool_calls: [{name: read_file, args: {path: creds.txt}}]
      - text: "never"
        delay: 1h
  - match: "READSECRET"
    turns:
      - tool_calls: [{name: read_file, args: {path: creds.txt}}]
      - text: "Found: {{last_result}}"
  - turns:
      - text: "The keys are ` + leakGitHub + `, ` + leakEnvValue + ` and ` + leakProvider + `."
`

// leakEnv is a workspace holding creds.txt, a data root whose researcher
// role (the operator's) runs the script, and an environment with the
// secret-named variable and the provider key (its server is a closed
// loopback port: nothing calls it).
func leakEnv(t *testing.T) []string {
	t.Helper()
	root := t.TempDir()
	ws, data := filepath.Join(root, "ws"), filepath.Join(root, "data")
	for _, d := range []string{ws, filepath.Join(data, "agents")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(root, "script.yaml")
	creds := "github " + leakGitHub + "\nMY_SERVICE_PASS=" + leakEnvValue + "\nANTHROPIC_API_KEY=" + leakProvider + "\n"
	role := "---\nname: researcher\ndescription: reads files\ntools: [read_file]\nmodel: scripted/" + script + "\n---\nRead what you are asked to.\n"
	for path, body := range map[string]string{script: leakScript, filepath.Join(ws, "creds.txt"): creds,
		filepath.Join(data, "agents", "researcher.md"): role} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + data, "AVA_WORKSPACE=" + ws,
		"AVA_MODEL=scripted/" + script, "AVA_CONFIRM=never", "MY_SERVICE_PASS=" + leakEnvValue,
		"ANTHROPIC_API_KEY=" + leakProvider, "ANTHROPIC_BASE_URL=http://127.0.0.1:9"}
}

// checkMasked fails when out holds a planted secret, or (when masked is
// true) shows no mask: the surface must have shown something masked.
func checkMasked(t *testing.T, surface, out string, masked bool) {
	t.Helper()
	for _, s := range leaked {
		if strings.Contains(out, s) {
			t.Errorf("%s shows %q in clear:\n%s", surface, s, out)
		}
	}
	if masked && !strings.Contains(out, "[REDACTED]") {
		t.Errorf("%s shows no [REDACTED]; did the secret reach it?\n%s", surface, out)
	}
}

// TestResultsMaskedOnEverySurface plants secrets that a subagent reads
// and returns and that the orchestrator quotes, then reads them back on
// every surface that shows a result: the HTTP API (a running run, a
// stopped one's partial work, a finished one, list and get), the chat's
// done event, MCP over /mcp and over stdio, the Telegram answer, `ava
// spawn --wait [--json]` and `ava run --json`. None shows a secret, each
// shows the mask.
func TestResultsMaskedOnEverySurface(t *testing.T) {
	env := leakEnv(t)
	t.Run("daemon", func(t *testing.T) { leakDaemonSurfaces(t, env) })
	t.Run("command line", func(t *testing.T) {
		for _, args := range [][]string{
			{"spawn", "--role", "researcher", "--wait", "READSECRET"},
			{"spawn", "--role", "researcher", "--wait", "--json", "READSECRET"},
			{"run", "--json", "quote the keys"},
		} {
			out, errOut, code := avaEnv(t, env, args...)
			if code != 0 {
				t.Fatalf("ava %v: exit %d\n%s\n%s", args, code, out, errOut)
			}
			checkMasked(t, fmt.Sprintf("ava %v stdout", args), out, true)
			checkMasked(t, fmt.Sprintf("ava %v stderr", args), errOut, false)
		}
	})
	t.Run("mcp stdio", func(t *testing.T) {
		cmd := exec.Command(avaBin, "mcp")
		cmd.Env = env
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(bg(t), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		checkMasked(t, "spawn_subagent over stdio", mcpSpawn(t, cs), true)
	})
}

// avaEnv runs the binary with exactly env.
func avaEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(avaBin, args...)
	cmd.Env = env
	return runCmd(t, cmd)
}

// mcpSpawn calls spawn_subagent (waiting) and returns the whole result
// as JSON.
func mcpSpawn(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(bg(t), &mcp.CallToolParams{Name: "spawn_subagent",
		Arguments: map[string]any{"role": "researcher", "task": "READSECRET"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// leakDaemonSurfaces drives the daemon's surfaces.
func leakDaemonSurfaces(t *testing.T, env []string) {
	tg := newLeakTelegram(t)
	d := startDaemon(t, append(env, "TELEGRAM_BOT_TOKEN=1:fake", "AVA_TELEGRAM_API_URL="+tg.URL, "AVA_TELEGRAM_ALLOWED=4242"))
	get := func(path string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+d.addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}

	// A running run whose task quotes a secret, stopped after it read
	// the file: its partial work holds what it read.
	blocked, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "BLOCKSECRET with " + leakEnvValue})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(get("/api/subagents/"+blocked.ID), `"iteration":2`) })
	checkMasked(t, "GET /api/subagents/{id} while running", get("/api/subagents/"+blocked.ID), true)
	checkMasked(t, "GET /api/subagents while running", get("/api/subagents"), true)
	if _, err := d.c.Stop(bg(t), blocked.SessionKey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(get("/api/subagents/"+blocked.ID), `"status":"cancelled"`) })
	stopped := get("/api/subagents/" + blocked.ID)
	if !strings.Contains(stopped, "creds.txt") && !strings.Contains(stopped, "github") {
		t.Errorf("the stopped run shows none of its partial work: %s", stopped)
	}
	checkMasked(t, "GET /api/subagents/{id} of a stopped run", stopped, true)

	// A finished run, still in the daemon's memory.
	done, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "researcher", Task: "READSECRET"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(get("/api/subagents/"+done.ID), `"status":"success"`) })
	checkMasked(t, "GET /api/subagents/{id} after the end", get("/api/subagents/"+done.ID), true)
	checkMasked(t, "GET /api/subagents after the end", get("/api/subagents"), true)

	// The chat's done event.
	st, err := d.c.Chat(bg(t), client.ChatRequest{Message: "quote the keys"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		checkMasked(t, "chat event "+ev.Type, string(ev.Data), ev.Type == client.EventDone)
		if ev.Type == client.EventDone {
			break
		}
	}
	st.Close()

	// MCP over streamable HTTP.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(bg(t),
		&mcp.StreamableClientTransport{Endpoint: "http://" + d.addr + "/mcp", HTTPClient: &http.Client{Transport: tokenTransport{d.token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkMasked(t, "spawn_subagent over /mcp", mcpSpawn(t, cs), true)

	// The Telegram chat's answer, final edit included.
	tg.deliver("quote the keys")
	waitFor(t, func() bool {
		s, err := d.c.Session(bg(t), "ava:telegram:4242")
		return err == nil && s.State == "idle" && strings.Contains(tg.all(), "The keys are")
	})
	time.Sleep(time.Second) // the final edit follows the turn's end
	checkMasked(t, "Telegram messages", tg.all(), true)
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 30 s")
}

// leakTelegram is a fake Bot API on loopback that delivers one message
// when told to and records every text the bot sends or edits.
type leakTelegram struct {
	*httptest.Server
	mu      sync.Mutex
	pending string
	sent    []string
}

func newLeakTelegram(t *testing.T) *leakTelegram {
	tg := &leakTelegram{}
	tg.Server = httptest.NewServer(http.HandlerFunc(tg.serve))
	t.Cleanup(tg.Close)
	return tg
}

// deliver makes the next getUpdates return text from chat 4242.
func (tg *leakTelegram) deliver(text string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.pending = text
}

// all is every text the bot sent, joined.
func (tg *leakTelegram) all() string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return strings.Join(tg.sent, "\n---\n")
}

func (tg *leakTelegram) serve(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "getUpdates":
		tg.mu.Lock()
		text := tg.pending
		tg.pending = ""
		tg.mu.Unlock()
		if text == "" {
			time.Sleep(100 * time.Millisecond)
			fmt.Fprint(w, `{"ok":true,"result":[]}`)
			return
		}
		b, _ := json.Marshal(text)
		fmt.Fprintf(w, `{"ok":true,"result":[{"update_id":1,"message":{"message_id":1,"date":%d,"text":%s,
			"chat":{"id":4242,"type":"private"},"from":{"id":7,"is_bot":false,"first_name":"P"}}}]}`, time.Now().Unix(), b)
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

// tokenTransport adds the daemon's token to every request.
type tokenTransport struct{ token string }

func (b tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
