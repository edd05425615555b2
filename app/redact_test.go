package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, to read ava.db as it is

	"github.com/avaagent/ava/app"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/store/sqlite"
	"github.com/avaagent/ava/subagent"
	"github.com/avaagent/ava/tool"
)

// Planted secrets (made up, in real formats). The env secret is the
// value of MY_SERVICE_PASS, which no pattern knows: only its name says
// it is secret.
const (
	plantedAWSKeyID  = "AKIAIOSFODNN7EXAMPLE"
	plantedAWSSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	plantedGitHub    = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	plantedJWT       = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	plantedPEMBody   = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfnygWyF8PbnGy0AHB7MbmfsR3s"
	plantedURLPass   = "hunter2-db-pw"
	plantedEnvValue  = "opensesame-99-value"
)

// planted are the strings that must never be found anywhere.
var planted = []string{plantedAWSKeyID, plantedAWSSecret, plantedGitHub, plantedJWT, plantedPEMBody, plantedURLPass, plantedEnvValue}

// plantedText holds every planted secret, as a file or an answer would.
func plantedText() string {
	return "aws_access_key_id = " + plantedAWSKeyID + "\naws_secret_access_key = " + plantedAWSSecret +
		"\ngithub " + plantedGitHub + "\nsession " + plantedJWT +
		"\n-----BEGIN RSA PRIVATE KEY-----\n" + plantedPEMBody + "\n-----END RSA PRIVATE KEY-----" +
		"\ndb postgres://ava:" + plantedURLPass + "@db.internal:5432/ava" +
		"\nservice " + plantedEnvValue + "\n"
}

// TestSecretsNeverStored drives a subagent (scripted model) that reads a
// file of planted secrets and echoes them in its thinking, its answer and
// its result, with a secret in its task too; the orchestrator writes one
// to memory and a pending spawn proposes one. None of them may appear in
// ava.db (every table), the logs, the session files or the events a live
// subscriber receives.
func TestSecretsNeverStored(t *testing.T) {
	t.Setenv("MY_SERVICE_PASS", plantedEnvValue)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "creds.txt"), []byte(plantedText()), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "echo.yaml")
	echo := strings.ReplaceAll(plantedText(), "\n", " ")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(`turns:
  - thinking: "I will read %[1]s"
    text: "Reading the file for %[2]s."
    tool_calls: [{name: read_file, args: {path: creds.txt}}]
  - text: "Found: {{last_result}}"
`, echo, plantedGitHub)), 0o600); err != nil {
		t.Fatal(err)
	}
	in := openIn(t, root)
	ctx := context.Background()
	parent := tool.Caller{AgentID: "ava", SessionKey: "ava:cli:secrets"}

	h, err := in.Subagent.Spawn(ctx, subagent.Request{Parent: parent, Background: true, Config: subagent.Config{
		Role: "researcher", Model: "scripted/" + script, ModelBy: llm.NamedByOperator,
		Task: "check postgres://ava:" + plantedURLPass + "@db.internal/ava with token " + plantedJWT}})
	if err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(0)
	live := readUntilComplete(t, sub)
	sub.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := h.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	orchTools, err := in.OrchestratorTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, orchTools, "memory_write", parent, `{"content":"deploy key `+plantedGitHub+`","tags":["`+plantedAWSKeyID+`"]}`); res.IsError {
		t.Fatal(res.Output)
	}
	cfgJSON, _ := json.Marshal(map[string]string{"task": "run with AWS_SECRET_ACCESS_KEY=" + plantedAWSSecret})
	if err := in.Store.CreatePending(ctx, store.PendingSpawn{ID: "p-secret", SessionKey: parent.SessionKey, Config: cfgJSON,
		Rationale: "needs " + plantedEnvValue, Status: store.SpawnPending, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	waitAnnounced(t, in, h.ID())
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}

	for _, ev := range live {
		checkClean(t, fmt.Sprintf("live %s #%d", ev.Type, ev.Seq), ev.Content)
	}
	checkDatabase(t, filepath.Join(root, sqlite.FileName))
	checkFiles(t, root, "logs", "sessions")
	if len(live) == 0 || !strings.Contains(string(allContent(live)), "[REDACTED]") {
		t.Errorf("the live events show no masked secret; did the subagent echo them? %s", allContent(live))
	}
}

// openIn opens an instance on root (data root and workspace).
func openIn(t *testing.T, root string) *app.Instance {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	in, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// readUntilComplete reads a subagent's events, live ones included, until
// its SubagentComplete or the end of its stream.
func readUntilComplete(t *testing.T, sub *event.Subscription) []event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []event.Event
	for {
		evs, err := sub.Next(ctx)
		if errors.Is(err, event.ErrClosed) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, evs...)
		for _, ev := range evs {
			if ev.Type == event.SubagentComplete {
				return out
			}
		}
	}
}

// waitAnnounced waits for the run's result to reach its parent session.
func waitAnnounced(t *testing.T, in *app.Instance, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		r, err := in.Store.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Announced {
			return
		}
	}
	t.Fatalf("run %s was never announced", id)
}

func allContent(evs []event.Event) []byte {
	var b bytes.Buffer
	for _, ev := range evs {
		b.Write(ev.Content)
	}
	return b.Bytes()
}

// checkClean fails for every planted secret in data.
func checkClean(t *testing.T, where string, data []byte) {
	t.Helper()
	for _, s := range planted {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("%s holds the planted %.12s…", where, s)
		}
	}
}

// checkDatabase reads every column of every table of the database as
// text, and the database's files as bytes (free pages and indexes
// included).
func checkDatabase(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := queryStrings(t, db, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if len(tables) < 5 {
		t.Fatalf("only tables %v", tables)
	}
	var rows int
	for _, table := range tables {
		for _, text := range queryStrings(t, db, `SELECT * FROM "`+table+`"`) {
			checkClean(t, "ava.db table "+table, []byte(text))
			rows++
		}
	}
	if rows == 0 {
		t.Fatal("read nothing from ava.db")
	}
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkClean(t, filepath.Base(f), data)
	}
}

// queryStrings returns every column of every row of q as text.
func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				out = append(out, string(v))
			case string:
				out = append(out, v)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkFiles reads every file under root's dirs.
func checkFiles(t *testing.T, root string, dirs ...string) {
	t.Helper()
	var n int
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n++
			rel, _ := filepath.Rel(root, p)
			checkClean(t, rel, data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 2 {
		t.Fatalf("only %d log and session files", n)
	}
}
