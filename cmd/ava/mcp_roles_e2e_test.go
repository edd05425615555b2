package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// fsServer returns node and the reference filesystem MCP server from
// npm (../../mcpclient/testdata/fs-server, installed by `npm ci`, which
// .ci/run does). Without node or the package the test skips, unless
// AVA_REQUIRE_NODE=1.
func fsServer(t *testing.T) (node, script string) {
	t.Helper()
	return npmServer(t, "fs-server", "server-filesystem")
}

// npmServer returns node and the entry point of the npm MCP server
// @modelcontextprotocol/<pkg> installed in ../../mcpclient/testdata/<dir>
// (by `npm ci`, which .ci/run does; the test runs it when the package is
// missing). Without node or the package the test skips, unless
// AVA_REQUIRE_NODE=1.
func npmServer(t *testing.T, dir, pkg string) (node, script string) {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("AVA_REQUIRE_NODE") == "1" {
			t.Fatalf(format+" (AVA_REQUIRE_NODE=1)", args...)
		}
		t.Skipf(format+" (AVA_REQUIRE_NODE=1 makes this a failure)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not installed: the npm MCP server test needs it")
	}
	dir, err = filepath.Abs(filepath.Join("..", "..", "mcpclient", "testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefix", dir).CombinedOutput()
		if err != nil {
			skip("@modelcontextprotocol/%s is not installed in %s and npm ci failed (no registry?): %v\n%s", pkg, dir, err, out)
		}
	}
	return node, script
}

// mcpRolesScript: the orchestrator is not used; the subagent reads a
// file through the npm server's read_text_file and answers with it.
const mcpRolesScript = `turns:
  - tool_calls:
      - {name: fs__read_text_file, args: {path: "NOTE"}}
  - text: "The note says: {{last_result}}"
`

// TestMCPRoleNodeServer: a role whose MCP server is a real npm server
// over stdio; a subagent calls its tool through the scripted model.
// `ava roles` shows the server (and with --mcp-tools its tools), `ava
// mcp list` the server, and no server process outlives ava.
func TestMCPRoleNodeServer(t *testing.T) {
	node, server := fsServer(t)
	root, ws := t.TempDir(), t.TempDir()
	note := filepath.Join(ws, "note.txt")
	must(t, os.WriteFile(note, []byte("hello from the npm filesystem server"), 0o600))
	// The server runs in the sandbox: its install folder is mounted
	// read-only (the workspace, its folder, is visible anyway).
	cfg := "mcp_servers:\n  fs:\n    command: " + node + "\n    args: [" + server + ", " + ws + "]\n    read_only_paths: [" + installDir(server) + "]\n"
	must(t, os.WriteFile(filepath.Join(root, "config.yaml"), []byte(cfg), 0o600))
	must(t, os.MkdirAll(filepath.Join(root, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "agents", "files.md"), []byte("---\nname: files\ndescription: Reads files through MCP.\nmcp_servers: [fs]\n---\nRead what you are asked.\n"), 0o600))
	script := filepath.Join(t.TempDir(), "script.yaml")
	must(t, os.WriteFile(script, []byte(strings.ReplaceAll(mcpRolesScript, "NOTE", note)), 0o600))
	env := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": ws}

	out, errOut, code := ava(t, env, "spawn", "--role", "files", "--model", "scripted/"+script, "--wait", "--json", "read the note")
	if code != 0 {
		t.Fatalf("spawn: exit %d: %s\n%s", code, errOut, out)
	}
	var res struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Status != "success" || !strings.Contains(string(res.Output), "hello from the npm filesystem server") {
		t.Fatalf("result: %s", out)
	}
	logs, _, _ := ava(t, env, "logs", "--type", "ToolResult", "--json")
	if !strings.Contains(logs, `"name":"fs__read_text_file"`) || !strings.Contains(logs, `"success":true`) {
		t.Errorf("no successful fs__read_text_file in the log:\n%s", logs)
	}

	out, errOut, code = ava(t, env, "roles")
	if code != 0 || !strings.Contains(out, "mcp:fs") {
		t.Errorf("roles: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = ava(t, env, "roles", "--mcp-tools")
	if code != 0 || !strings.Contains(out, "files: ") || !strings.Contains(out, "fs__read_text_file") {
		t.Errorf("roles --mcp-tools: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = ava(t, env, "mcp", "list")
	if code != 0 || !strings.Contains(out, "fs") || !strings.Contains(out, "stdio") || !strings.Contains(out, "not started") || !strings.Contains(out, "files") {
		t.Errorf("mcp list: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = ava(t, env, "mcp", "list", "--check")
	if code != 0 || !strings.Contains(out, "ok") || !strings.Contains(out, "fs__list_allowed_directories") {
		t.Errorf("mcp list --check: exit %d\n%s\n%s", code, out, errOut)
	}
	// No server process is left behind by any of these commands.
	if pids := processesWith(ws); len(pids) > 0 {
		t.Errorf("MCP server processes left: %v", pids)
	}
}

// everythingScript: the subagent calls two tools of the reference
// "everything" server: one with an enum argument whose result is
// structured content under an output schema, then one with an enum and a
// defaulted boolean whose result mixes annotated text and an image; each
// result reaches the model's next turn ({{last_result}}).
const everythingScript = `turns:
  - tool_calls:
      - {name: everything__get-structured-content, args: {location: "Chicago"}}
  - text: "Weather: {{last_result}}"
    tool_calls:
      - {name: everything__get-annotated-message, args: {messageType: "success", includeImage: true}}
  - text: "Annotated: {{last_result}}"
`

// TestMCPRoleEverythingServer: a role using the npm reference server
// @modelcontextprotocol/server-everything over stdio; the scripted
// model's calls of tools with enum, defaulted and output schemas reach
// the server, and their results (structured content, text and image)
// reach the model.
func TestMCPRoleEverythingServer(t *testing.T) {
	node, server := npmServer(t, "everything-server", "server-everything")
	root, ws := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "agents"), 0o700))
	role := "---\nname: tester\ndescription: Uses the everything server.\nmcp_servers:\n  - {name: everything, command: " + node + ", args: [" + server + ", stdio], read_only_paths: [" + installDir(server) + "]}\n---\nUse the tools.\n"
	must(t, os.WriteFile(filepath.Join(root, "agents", "tester.md"), []byte(role), 0o600))
	script := filepath.Join(t.TempDir(), "script.yaml")
	must(t, os.WriteFile(script, []byte(everythingScript), 0o600))
	env := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": ws}

	out, errOut, code := ava(t, env, "spawn", "--role", "tester", "--model", "scripted/"+script, "--wait", "--json", "try the everything server")
	if code != 0 {
		t.Fatalf("spawn: exit %d: %s\n%s", code, errOut, out)
	}
	var res struct {
		Status string `json:"status"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The second result: annotated text and the image, described.
	if res.Status != "success" || !strings.Contains(res.Output, "Annotated: ") || !strings.Contains(res.Output, "Operation completed successfully") ||
		!strings.Contains(res.Output, "[image image/png") {
		t.Fatalf("result: %s", out)
	}
	logs, _, _ := ava(t, env, "logs", "--json")
	// The first result, structured content, reached the model's next turn.
	if !strings.Contains(logs, "Weather: ") || !strings.Contains(logs, "Light rain / drizzle") {
		t.Errorf("the structured result did not reach the model:\n%s", logs)
	}
	for _, name := range []string{"everything__get-structured-content", "everything__get-annotated-message"} {
		if !strings.Contains(logs, `"name":"`+name+`"`) {
			t.Errorf("no %s call in the log", name)
		}
	}
	if strings.Contains(logs, `"success":false`) {
		t.Errorf("a failed tool call in the log:\n%s", logs)
	}
	if pids := processesWith(server); len(pids) > 0 {
		t.Errorf("MCP server processes left: %v", pids)
	}
}

// A role whose server fails to start still runs with its other tools,
// and the commands name the server.
func TestMCPRoleServerFails(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "agents", "half.md"), []byte("---\nname: half\ntools: [read_file]\nmcp_servers:\n  - {name: gone, command: /nonexistent/server}\n---\n"), 0o600))
	env := map[string]string{"AVA_DATA_ROOT": root}
	out, errOut, code := ava(t, env, "spawn", "--role", "half", "--offline", "--wait", "--json", "try")
	if code != 0 || !strings.Contains(out, `"status": "success"`) {
		t.Fatalf("spawn: exit %d\n%s\n%s", code, out, errOut)
	}
	logs, _, _ := ava(t, env, "logs", "--type", "Error")
	if !strings.Contains(logs, "MCP server gone") {
		t.Errorf("no error naming the server:\n%s", logs)
	}
	out, errOut, code = ava(t, env, "mcp", "list", "--check")
	if code == 0 || !strings.Contains(out+errOut, "MCP server gone") {
		t.Errorf("mcp list --check: exit %d\n%s\n%s", code, out, errOut)
	}
}

// crashyScript: the subagent calls a tool during which its server exits,
// then another tool of the same server, which starts it again.
const crashyScript = `conversations:
  - match: "CRASHY"
    turns:
      - tool_calls:
          - {name: crashy__crash, args: {}}
      - text: "Crash: {{last_result}}"
        tool_calls:
          - {name: crashy__echo, args: {text: "after the crash"}}
      - text: "Echo: {{last_result}}"
  - turns:
      - text: "nothing to do"
`

// TestMCPRoleServerCrashes: under the daemon, a role's MCP server (built
// on the npm SDK) exits in the middle of a call: the call's result, which
// reaches the model, names the server and says it stopped; the run goes
// on, and the next call starts the server again. A role whose server
// command does not exist runs with an error naming it. After the
// daemon's shutdown (SIGTERM) no server process is left.
func TestMCPRoleServerCrashes(t *testing.T) {
	node, dir := mcpNodeDir(t)
	server := filepath.Join(dir, "crashy-server.mjs")
	env, _ := daemonEnv(t)
	var root string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AVA_DATA_ROOT="); ok {
			root = v
		}
	}
	script := filepath.Join(t.TempDir(), "script.yaml")
	must(t, os.WriteFile(script, []byte(crashyScript), 0o600))
	// A data-root role is the operator's: it may name the script.
	model := "scripted/" + script
	must(t, os.MkdirAll(filepath.Join(root, "agents"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "agents", "crashy.md"), []byte("---\nname: crashy\ndescription: Uses a server that crashes.\nmodel: "+model+"\nmcp_servers:\n  - {name: crashy, command: "+node+", args: ["+server+"], read_only_paths: ["+dir+"]}\n---\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "agents", "lost.md"), []byte("---\nname: lost\ndescription: Uses a server that does not exist.\nmodel: "+model+"\ntools: [read_file]\nmcp_servers:\n  - {name: nowhere, command: /nonexistent/mcp-server-cmd}\n---\n"), 0o600))
	d := startDaemon(t, env)

	wait := func(id string) client.Subagent {
		t.Helper()
		for ctx := bg(t); ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
			sa, err := d.c.Subagent(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if sa.Status != "running" && sa.Status != "pending" && sa.Status != "queued" && len(sa.Result) > 0 {
				return sa
			}
		}
		t.Fatalf("%s did not end\n%s", id, d.stderr)
		return client.Subagent{}
	}
	sa, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "crashy", Task: "CRASHY"})
	if err != nil {
		t.Fatal(err)
	}
	sa = wait(sa.ID)
	var res struct {
		Status string `json:"status"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal(sa.Result, &res); err != nil {
		t.Fatalf("%v: %s", err, sa.Result)
	}
	if res.Status != "success" || !strings.Contains(res.Output, "Echo: echo from ") || !strings.Contains(res.Output, "after the crash") {
		t.Fatalf("result: %s\n%s", sa.Result, d.stderr)
	}
	logs, err := d.c.Logs(bg(t), url.Values{"agent": {sa.ID}})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(logs)
	for _, want := range []string{"Crash: ", "MCP server crashy stopped during the call", "exits mid-call on purpose"} {
		if !strings.Contains(string(all), want) {
			t.Errorf("the crash's result that reached the model does not say %q:\n%s", want, all)
		}
	}
	if pids := processesWith(server); len(pids) != 1 {
		t.Errorf("want the restarted server running in the daemon, got processes %v", pids)
	}

	lost, _, err := d.c.Spawn(bg(t), client.SpawnRequest{Role: "lost", Task: "anything"})
	if err != nil {
		t.Fatal(err)
	}
	if lost = wait(lost.ID); lost.Status != "success" {
		t.Errorf("a role whose server does not exist: %+v", lost)
	}
	logs, err = d.c.Logs(bg(t), url.Values{"agent": {lost.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := json.Marshal(logs); !strings.Contains(string(all), "MCP server nowhere") || !strings.Contains(string(all), "/nonexistent/mcp-server-cmd") {
		t.Errorf("no error naming the missing server:\n%s", all)
	}

	// ava mcp list --daemon shows the daemon's servers: crashy running
	// (started twice), nowhere failed.
	out, errOut, code := ava(t, map[string]string{"AVA_ADDR": d.addr, "AVA_DATA_ROOT": root}, "mcp", "list", "--daemon")
	if code != 0 || !strings.Contains(out, "state in the daemon at") || !regexp.MustCompile(`crashy .*running \(pid \d+\)`).MatchString(out) ||
		!regexp.MustCompile(`nowhere .*failed: MCP server nowhere`).MatchString(out) {
		t.Errorf("mcp list --daemon: exit %d\n%s\n%s", code, out, errOut)
	}
	var list client.MCPServerList
	req, _ := http.NewRequest("GET", "http://"+d.addr+"/api/mcp/servers", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Servers) != 2 || list.Servers[0].Name != "crashy" || list.Servers[0].Starts != 2 || list.Servers[0].PID == 0 ||
		!slices.Contains(list.Servers[0].Tools, "crashy__echo") || list.Servers[1].State != "failed" {
		t.Errorf("GET /api/mcp/servers: %+v %v", list, err)
	}

	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.exitCode(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.stderr)
	}
	if pids := processesWith(server); len(pids) > 0 {
		t.Errorf("MCP server processes left after shutdown: %v", pids)
	}
}

// installDir is the npm project folder (the one holding node_modules)
// of an installed package's entry point, which a sandboxed server
// needs mounted.
func installDir(script string) string {
	dir, _, _ := strings.Cut(script, string(filepath.Separator)+"node_modules"+string(filepath.Separator))
	return dir
}

// processesWith lists the PIDs whose command line mentions s.
func processesWith(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), s) {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
				if i := strings.LastIndexByte(string(st), ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
					continue
				}
			}
			out = append(out, e.Name())
		}
	}
	return out
}
