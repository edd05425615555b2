package main_test

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/store/sqlite"
)

// webhookSecretPath is a webhook's path and query that are its
// credential, as Slack's and Discord's are.
const webhookSecretPath = "/services/T0/B0/SECRETpath?token=tok-SECRET&api_key=key-SECRET"

// TestWebhookURLIsNeitherShownNorStored: a webhook whose path and query
// are its credential is named by scheme and host only by GET
// /api/hooks, `ava hooks` (table and --json) and the daemon's log, and
// the hook_deliveries table holds no part of its URL, while a failed
// delivery waits and after it was delivered, for real, to the URL of
// the configuration (the receiver is asked at the secret path).
func TestWebhookURLIsNeitherShownNorStored(t *testing.T) {
	env, rcv, d, sa := oneRunWebhookDownAt(t, "    attempts: 50\n    backoff: 200ms\n", "QUICK once", webhookSecretPath)
	shown := rcv.srv.URL + "/…"
	var stdout string
	waitFor(t, func() bool {
		stdout, _, _ = avaIn(t, env, "hooks")
		return strings.Contains(stdout, "failed") && strings.Contains(stdout, "503")
	})
	check := func(when string) {
		t.Helper()
		hooksOut, stderr, code := avaIn(t, env, "hooks", "--all")
		if code != 0 {
			t.Fatalf("ava hooks --all (%s): exit %d\n%s", when, code, stderr)
		}
		noSecret(t, "ava hooks "+when, hooksOut)
		if strings.Count(hooksOut, shown) < 2 { // the hook, and its delivery
			t.Errorf("ava hooks (%s) does not name the webhook as %s:\n%s", when, shown, hooksOut)
		}
		asJSON, _, _ := avaIn(t, env, "hooks", "--all", "--json")
		noSecret(t, "ava hooks --json "+when, asJSON)
		if !strings.Contains(asJSON, `"Target": "`+shown+`"`) {
			t.Errorf("ava hooks --json (%s) lacks the shown target:\n%s", when, asJSON)
		}
		api := apiGet(t, d, "/api/hooks?status=all")
		noSecret(t, "GET /api/hooks "+when, api)
		if strings.Count(api, `"target":"`+shown+`"`) != 2 {
			t.Errorf("GET /api/hooks (%s) does not name the webhook as %s:\n%s", when, shown, api)
		}
		noSecret(t, "table hook_deliveries "+when, hookTable(t, env))
	}
	check("while the delivery fails")
	if !strings.Contains(stdout, "webhook "+shown+": answered 503") {
		t.Errorf("the failure does not name the webhook as shown:\n%s", stdout)
	}

	rcv.setUp(true)
	waitFor(t, func() bool { return len(rcv.events()) > 0 })
	got := rcv.events()
	if len(got) != 1 || got[0].body["jobId"] != sa.ID || got[0].uri != webhookSecretPath {
		t.Fatalf("webhook got %+v, want %s's completion at %s", got, sa.ID, webhookSecretPath)
	}
	waitFor(t, func() bool {
		out, _, _ := avaIn(t, env, "hooks")
		return strings.Contains(out, "No delivery is waiting")
	})
	check("after the delivery")
	table := hookTable(t, env)
	if !strings.Contains(table, "delivered") || !strings.Contains(table, "url") {
		t.Fatalf("table hook_deliveries:\n%s", table)
	}
	must(t, d.cmd.Process.Signal(os.Interrupt))
	d.exitCode(t)
	noSecret(t, "the daemon's log", d.stderr.String())
}

// noSecret fails when text holds any part of webhookSecretPath.
func noSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, part := range []string{"SECRET", "/services", "T0/B0", "tok-", "api_key"} {
		if strings.Contains(text, part) {
			t.Errorf("%s shows %q of the webhook's URL:\n%s", what, part, text)
		}
	}
}

// apiGet is the body of an authorised GET of path on the daemon.
func apiGet(t *testing.T, d *daemon, path string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(bg(t), http.MethodGet, "http://"+d.addr+path, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	return string(b)
}

// hookTable is every column of every row of the data root's
// hook_deliveries table, as text, read with SQL (not through the store).
func hookTable(t *testing.T, env []string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(envValue(env, "AVA_DATA_ROOT"), sqlite.FileName)+"?mode=ro&_pragma=busy_timeout(5000)")
	must(t, err)
	defer db.Close()
	rows, err := db.QueryContext(bg(t), `SELECT * FROM hook_deliveries`)
	must(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	must(t, err)
	var b strings.Builder
	fmt.Fprintln(&b, strings.Join(cols, " | "))
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		must(t, rows.Scan(ptrs...))
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprint(&b, v)
		}
		b.WriteString("\n")
	}
	must(t, rows.Err())
	return b.String()
}
