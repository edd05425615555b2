package main_test

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/store"
)

// boardClusterScript: the orchestrator spawns a parallel group whose
// members run on the workers: alpha posts a finding at once; beta waits
// three seconds before it reads the board, then answers.
const boardClusterScript = `conversations:
  - match: "board alpha"
    turns:
      - tool_calls: [{name: post_finding, args: {text: "invoices are paged by cursor (CLUSTER-FINDING)"}}]
      - text: "alpha done"
  - match: "board beta"
    turns:
      - tool_calls: [{name: read_findings, args: {}}]
        delay: 3s
      - text: "beta read: {{last_result}}"
  - match: "BOARDPAR"
    turns:
      - tool_calls:
          - name: spawn_subagents
            args: {mode: parallel, tasks: [{role: researcher, task: "board alpha"}, {role: researcher, task: "board beta"}]}
      - text: "group done: {{last_result}}"
  - turns:
      - text: "hello back"
`

const clusterFinding = "invoices are paged by cursor (CLUSTER-FINDING)"

// TestClusterBoardAcrossWorkers: a gateway and two workers; the members
// of a parallel group run on the workers and share one board through
// PostgreSQL: the later member's conversation holds the earlier one's
// finding inside the read_findings block, the group's result the
// orchestrator reads carries the board, the gateway's API answers it,
// and the post is a FindingPosted entry of the cluster's audit log.
func TestClusterBoardAcrossWorkers(t *testing.T) {
	cl := newCluster(t)
	if err := os.WriteFile(strings.TrimPrefix(cl.model, "scripted/"), []byte(boardClusterScript), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := cl.start("gateway")
	cl.start("worker")
	cl.start("worker")
	res := chatText(t, gw.c, client.ChatRequest{Message: "BOARDPAR please"})
	if !strings.Contains(res.Text, "group done") || !strings.Contains(res.Text, `"board"`) || !strings.Contains(res.Text, clusterFinding) {
		t.Fatalf("the orchestrator's group result lacks the board: %s", res.Text)
	}
	list, err := gw.c.Subagents(bg(t), client.SubagentFilter{Parent: res.Session})
	if err != nil || len(list) != 2 || list[0].GroupID == "" || list[0].GroupID != list[1].GroupID {
		t.Fatalf("members %+v %v", list, err)
	}
	var alpha, beta client.Subagent
	for _, sa := range list {
		if strings.Contains(sa.Task, "board alpha") {
			alpha = sa
		} else {
			beta = sa
		}
	}
	fs, err := gw.c.Findings(bg(t), alpha.GroupID)
	if err != nil || len(fs) != 1 || fs[0].Text != clusterFinding || fs[0].SubagentID != alpha.ID {
		t.Fatalf("the gateway's board: %+v %v", fs, err)
	}
	msgs, err := cl.store().Messages(bg(t), store.SubagentSessionPrefix+beta.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, m := range msgs {
		raw := string(m.Blocks)
		if i := strings.Index(raw, `\u003cuntrusted source=\"tool read_findings\"\u003e`); i >= 0 {
			block = raw[i:]
		} else if i := strings.Index(raw, `<untrusted source=\"tool read_findings\">`); i >= 0 {
			block = raw[i:]
		}
	}
	if !strings.Contains(block, "CLUSTER-FINDING") || !strings.Contains(block, alpha.ID) {
		t.Fatalf("beta's conversation lacks alpha's finding in the read_findings block:\n%+v", msgs)
	}
	logs, err := gw.c.Logs(bg(t), url.Values{"type": {"FindingPosted"}, "agent": {alpha.ID}})
	if err != nil || len(logs.Entries) != 1 || !strings.Contains(string(logs.Entries[0]), "CLUSTER-FINDING") {
		t.Fatalf("audit log: %+v %v", logs, err)
	}
}
