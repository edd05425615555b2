package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/avaagent/ava/gateway/client"
)

// panelLogin trades a login link's code (from its fragment) for a web
// panel login at the daemon at addr, as the panel's page does: the
// session cookie and the login's secret.
func panelLogin(t *testing.T, addr, link string) (*http.Response, client.LoginResult) {
	t.Helper()
	_, code, ok := strings.Cut(link, "/#login=")
	if !ok {
		t.Fatalf("login link %q, want http://ADDR/#login=CODE", link)
	}
	resp, err := http.Post("http://"+strings.TrimSuffix(addr, "/")+"/api/login", "application/json", strings.NewReader(`{"code":"`+code+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res client.LoginResult
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			t.Fatal(err)
		}
	}
	return resp, res
}

// get sends GET path to the daemon at addr with the headers and returns
// the status.
func get(t *testing.T, addr, path string, hdr map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+strings.TrimSuffix(addr, "/")+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDaemonMakesItsTokenAndTheCLIReadsIt: a daemon started with no
// AVA_TOKEN creates a 0600 token in its data root and keeps it across
// restarts; the command line on that data root works without AVA_TOKEN,
// one on another data root gets a 401 that says what to do; with its
// output not a terminal the daemon prints no login link but says to run
// ava panel, whose link works once.
func TestDaemonMakesItsTokenAndTheCLIReadsIt(t *testing.T) {
	env, _ := daemonEnv(t)
	root := strings.TrimPrefix(env[2], "AVA_DATA_ROOT=")
	d := startDaemon(t, env)
	fi, err := os.Stat(client.TokenPath(root))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", fi, err)
	}
	cli := func(extra []string, args ...string) (string, string, int) {
		cmd := exec.Command(avaBin, args...)
		cmd.Env = append(append(env, "AVA_ADDR="+d.addr), extra...)
		return runCmd(t, cmd)
	}
	if out, errOut, code := cli(nil, "ps", "--all"); code != 0 || !strings.Contains(out, "ID") {
		t.Fatalf("ps on the daemon's data root: exit %d\n%s\n%s", code, out, errOut)
	}
	other := []string{"AVA_DATA_ROOT=" + t.TempDir()}
	if _, errOut, code := cli(other, "ps"); code != 1 || !strings.Contains(errOut, "401") || !strings.Contains(errOut, "AVA_DATA_ROOT") {
		t.Fatalf("ps on another data root: exit %d\n%s", code, errOut)
	}
	if out, errOut, code := cli(append(other, "AVA_TOKEN="+d.token), "ps", "--all"); code != 0 {
		t.Fatalf("ps with AVA_TOKEN: exit %d\n%s\n%s", code, out, errOut)
	}

	// Its output is a pipe (as under systemd): no link, where to get one.
	waitFor(t, func() bool { return strings.Contains(d.stdout.String(), "run ava panel") })
	if out := d.stdout.String() + d.stderr.String(); strings.Contains(out, "login=") {
		t.Fatalf("the daemon printed a login link into a pipe:\n%s", out)
	}
	link, errOut, code := cli(nil, "panel")
	link = strings.TrimSpace(link)
	if code != 0 || !strings.HasPrefix(link, "http://"+strings.TrimSuffix(d.addr, "/")+"/#login=") {
		t.Fatalf("ava panel: exit %d\n%s\n%s", code, link, errOut)
	}
	for i, want := range []int{http.StatusOK, http.StatusUnauthorized} {
		resp, res := panelLogin(t, d.addr, link)
		if resp.StatusCode != want || (i == 0) != (len(resp.Cookies()) == 1 && res.Secret != "") {
			t.Fatalf("login link, use %d: %d %v, want %d", i+1, resp.StatusCode, resp.Cookies(), want)
		}
	}

	// A restart on the same data root keeps the token.
	tok := d.token
	d.cmd.Process.Signal(os.Interrupt)
	d.exitCode(t)
	d2 := startDaemon(t, env)
	if d2.token != tok {
		t.Fatal("a restart made a new token")
	}
	if _, err := d2.c.Sessions(bg(t)); err != nil {
		t.Fatal(err)
	}
}

// TestLoginLinkOnlyOnATerminal: ava serve prints the one-time login link
// when its output is a terminal (a person starting it by hand).
func TestLoginLinkOnlyOnATerminal(t *testing.T) {
	env, _ := daemonEnv(t)
	cmd := exec.Command(avaBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = env
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		tty.Close()
	})
	var out lockedBuffer
	go io.Copy(&out, tty)
	re := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/#login=[A-Za-z0-9_-]+) `)
	waitFor(t, func() bool { return re.MatchString(out.String()) })
	if strings.Contains(out.String(), "run ava panel") {
		t.Fatalf("the terminal got the hint meant for logs:\n%s", out.String())
	}
	link := re.FindStringSubmatch(out.String())[1]
	addr := strings.TrimPrefix(strings.Split(link, "/#")[0], "http://")
	if resp, res := panelLogin(t, addr, link); resp.StatusCode != http.StatusOK || res.Secret == "" {
		t.Fatalf("the printed link: %d", resp.StatusCode)
	}
}

// TestPanelLoginsAcrossDaemons: two daemons on one data root (as the
// gateways of a cluster behind one address) share the web panel's
// logins: a login made at one opens the other, needs its secret at
// both, is listed by ava panel logins and, revoked by ava panel revoke
// at one, is refused by both.
func TestPanelLoginsAcrossDaemons(t *testing.T) {
	env, _ := daemonEnv(t)
	d1 := startDaemon(t, env)
	d2 := startDaemon(t, env)
	cli := func(d *daemon, args ...string) (string, string, int) {
		cmd := exec.Command(avaBin, args...)
		cmd.Env = append(env, "AVA_ADDR="+d.addr)
		return runCmd(t, cmd)
	}
	link, errOut, code := cli(d1, "panel")
	if code != 0 {
		t.Fatalf("ava panel: exit %d %s", code, errOut)
	}
	resp, res := panelLogin(t, d1.addr, strings.TrimSpace(link))
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 {
		t.Fatalf("login at the first daemon: %d %v", resp.StatusCode, resp.Cookies())
	}
	value := resp.Cookies()[0].Value
	cookieAt := func(d *daemon) string {
		_, port, _ := net.SplitHostPort(strings.TrimSuffix(d.addr, "/"))
		return "ava_session_" + port + "=" + value
	}
	for _, d := range []*daemon{d1, d2} {
		if c := get(t, d.addr, "/api/sessions", map[string]string{"Cookie": cookieAt(d), client.LoginHeader: res.Secret}); c != 200 {
			t.Fatalf("the login at %s: %d, want 200", d.addr, c)
		}
		if c := get(t, d.addr, "/api/sessions", map[string]string{"Cookie": cookieAt(d)}); c != http.StatusUnauthorized {
			t.Fatalf("the cookie alone at %s: %d, want 401", d.addr, c)
		}
	}
	out, errOut, code := cli(d2, "panel", "logins")
	if code != 0 || !strings.Contains(out, res.ID) {
		t.Fatalf("ava panel logins at the second daemon: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := cli(d1, "panel", "revoke", res.ID); code != 0 || !strings.Contains(out, "revoked "+res.ID) {
		t.Fatalf("ava panel revoke: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, d := range []*daemon{d1, d2} {
		if c := get(t, d.addr, "/api/sessions", map[string]string{"Cookie": cookieAt(d), client.LoginHeader: res.Secret}); c != http.StatusUnauthorized {
			t.Fatalf("the revoked login at %s: %d, want 401", d.addr, c)
		}
	}
	if _, errOut, code := cli(d2, "panel", "revoke", res.ID); code != 1 || !strings.Contains(errOut, "ava panel logins") {
		t.Fatalf("revoking it again: exit %d %s", code, errOut)
	}
	if out, _, code := cli(d2, "panel", "revoke", "all"); code != 0 || !strings.Contains(out, "revoked 0") {
		t.Fatalf("ava panel revoke all: exit %d %s", code, out)
	}
}

// TestAnotherUserCannotUseTheDaemon: as root, a process of another uid
// (nobody, through setpriv) reaches the daemon of a default start only
// for /healthz: it cannot read the token, and every API route, the
// escaped-path trick among them, answers 401.
func TestAnotherUserCannotUseTheDaemon(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another uid")
	}
	setpriv, err1 := exec.LookPath("setpriv")
	curl, err2 := exec.LookPath("curl")
	if err1 != nil || err2 != nil {
		t.Skip("needs setpriv and curl")
	}
	env, _ := daemonEnv(t)
	root := strings.TrimPrefix(env[2], "AVA_DATA_ROOT=")
	d := startDaemon(t, env)
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/"}
		cmd.Dir = "/"
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := asNobody("cat", client.TokenPath(root)); err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("nobody read the token file: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Dir(root)); err != nil {
		t.Fatal(err)
	}
	base := "http://" + strings.TrimSuffix(d.addr, "/")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{base + "/healthz"}, "200"},
		{[]string{base + "/api/logs"}, "401"},
		{[]string{base + "/api/subagents"}, "401"},
		{[]string{"--path-as-is", base + "/api/subagents/..%2F..%2Findex.html"}, "401"},
		{[]string{"-X", "POST", "-H", "Content-Type: application/json", "-d", `{"role":"researcher","task":"x"}`, base + "/api/subagents"}, "401"},
		{[]string{"-X", "POST", "-H", "Content-Type: application/json", "-d", `{"message":"hi"}`, base + "/api/chat"}, "401"},
	} {
		args := append([]string{curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"}, c.args...)
		out, err := asNobody(args...)
		if err != nil || out != c.want {
			t.Errorf("as nobody: curl %v: %q %v, want %s", c.args, out, err, c.want)
		}
	}
}

// TestIdleConnectionsDoNotStarveTheOwner: the attack of issue 38 item 6
// on a real daemon whose descriptor limit is 512 (ulimit -n): 2,000 idle
// connections without the token would leave it unable to accept
// (accept4: too many open files) until its header timeout freed some,
// and the owner's request would wait behind them. They are cut down to
// the few unauthenticated ones allowed, and the owner's request answers
// at once.
func TestIdleConnectionsDoNotStarveTheOwner(t *testing.T) {
	env, _ := daemonEnv(t)
	d := startDaemonCmd(t, env, exec.Command("/bin/sh", "-c", `ulimit -n 512 && exec "$0" serve --addr 127.0.0.1:0`, avaBin))
	addr := strings.TrimSuffix(d.addr, "/")
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range 2000 {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	time.Sleep(200 * time.Millisecond) // the daemon accepts what it can
	start := time.Now()
	ctx, cancel := context.WithTimeout(bg(t), 5*time.Second)
	defer cancel()
	if _, err := d.c.Sessions(ctx); err != nil {
		t.Fatalf("the owner's request behind 2,000 idle connections: %v after %s\n%s", err, time.Since(start), d.stderr)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the owner's request took %s behind 2,000 idle connections", took)
	}
	if strings.Contains(d.stderr.String(), "too many open files") {
		t.Fatalf("the daemon ran out of descriptors:\n%s", d.stderr)
	}
}
