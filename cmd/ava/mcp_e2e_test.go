package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpScript drives the subagents of the `ava mcp` tests.
const mcpScript = `conversations:
  - match: "BLOCKTASK"
    turns:
      - text: "never"
        delay: 1h
  - match: "SLOW"
    turns:
      - text: "slow done"
        delay: 1200ms
      - text: "follow-up answered"
  - turns:
      - text: "quick done"
      - text: "follow-up answered"
`

// mcpEnv is the environment of an `ava mcp` process: a fresh data root
// and the scripted model.
func mcpEnv(t *testing.T, confirm string) (env []string, model string) {
	t.Helper()
	root := t.TempDir()
	script := filepath.Join(root, "script.yaml")
	if err := os.WriteFile(script, []byte(mcpScript), 0o600); err != nil {
		t.Fatal(err)
	}
	model = "scripted/" + script
	operatorSubagentScript(t, root, script)
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + root, "AVA_WORKSPACE=" + root,
		"AVA_MODEL=" + model, "AVA_CONFIRM=" + confirm}, model
}

// TestMCPStdioGoClient drives `ava mcp` with the Go SDK's client over
// the command transport.
func TestMCPStdioGoClient(t *testing.T) {
	env, _ := mcpEnv(t, "never")
	cmd := exec.Command(avaBin, "mcp")
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p := &mcp.CallToolParams{Name: "spawn_subagent", Arguments: map[string]any{"role": "researcher", "task": "hello", "model": spawnModel}}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || sc["status"] != "success" || !strings.HasPrefix(sc["subagent_id"].(string), "S-") {
		t.Fatalf("spawn_subagent over stdio: %+v", res.StructuredContent)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestMCPNodeClient drives `ava mcp` with a real npm MCP client: the
// official TypeScript SDK (testdata/mcp-node, installed by `npm ci`,
// which .ci/run does). Without node it skips, unless AVA_REQUIRE_NODE=1.
func TestMCPNodeClient(t *testing.T) {
	node, dir := mcpNodeDir(t)
	for _, tc := range []struct{ mode, confirm string }{{"main", "never"}, {"confirm", "always"}, {"http", "never"}} {
		t.Run(tc.mode, func(t *testing.T) {
			env, _ := mcpEnv(t, tc.confirm)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			target := avaBin
			clientEnv := append(env, "AVA_TEST_MODEL="+spawnModel)
			if tc.mode == "http" {
				// The daemon's /mcp over streamable HTTP, behind a bearer
				// token the client sends.
				const token = "node-client-token"
				d := startDaemon(t, append(env, "AVA_TOKEN="+token))
				target = "http://" + d.addr + "/mcp"
				clientEnv = append(clientEnv, "AVA_TEST_TOKEN="+token)
			}
			cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"), target, tc.mode)
			cmd.Dir = dir
			cmd.Env = clientEnv
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node client: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
			}
			var seen map[string]any
			if err := json.Unmarshal(out, &seen); err != nil {
				t.Fatalf("node client printed %q: %v", out, err)
			}
			t.Logf("node client saw: %s", strings.TrimSpace(string(out)))
			if tc.mode == "confirm" {
				return
			}
			// Bad arguments are answered with an MCP error: a tool result
			// with isError (the SDK validates the arguments against the
			// input schema; Ava refuses a missing or unknown role).
			bad, _ := seen["badArgs"].([]any)
			if len(bad) != 3 {
				t.Fatalf("bad arguments: %v", seen["badArgs"])
			}
			for i, want := range []string{"task", "role", "no_such_role"} {
				if s, _ := bad[i].(string); !strings.HasPrefix(s, "isError: ") || !strings.Contains(s, want) {
					t.Errorf("bad arguments %d: %q, want an isError result about %s", i, s, want)
				}
			}
		})
	}
}

// mcpNodeDir returns node and testdata/mcp-node with the official
// TypeScript SDK installed (by `npm ci`, which .ci/run does; the test runs
// it when the package is missing). Without node or the package the test
// skips, unless AVA_REQUIRE_NODE=1.
func mcpNodeDir(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("AVA_REQUIRE_NODE") == "1" {
			t.Fatal("node is not installed, and AVA_REQUIRE_NODE=1")
		}
		t.Skip("node is not installed: the npm MCP tests need it (AVA_REQUIRE_NODE=1 makes this a failure)")
	}
	dir, err = filepath.Abs(filepath.Join("testdata", "mcp-node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefix", dir).CombinedOutput()
		if err != nil {
			if os.Getenv("AVA_REQUIRE_NODE") == "1" {
				t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
			}
			t.Skipf("the npm MCP SDK is not installed and npm ci failed (no registry?): %v\n%s", err, out)
		}
	}
	return node, dir
}
