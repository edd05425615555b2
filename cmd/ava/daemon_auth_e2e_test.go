package main_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// loginLink waits for the one-time link the daemon prints.
func (d *daemon) loginLink(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`http://\S+/\?login=\S+`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindString(d.stdout.String()); m != "" {
			return m
		}
	}
	t.Fatalf("no login link in the daemon's output:\n%s", d.stdout)
	return ""
}

// TestDaemonMakesItsTokenAndTheCLIReadsIt: a daemon started with no
// AVA_TOKEN creates a 0600 token in its data root and keeps it across
// restarts; the command line on that data root works without AVA_TOKEN,
// one on another data root gets a 401 that says what to do; the login
// link ava serve prints works once, and ava panel prints a new one.
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

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	link := d.loginLink(t)
	for i, want := range []int{http.StatusSeeOther, http.StatusUnauthorized} {
		resp, err := noRedirect.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || (i == 0) != (len(resp.Cookies()) == 1) {
			t.Fatalf("login link, use %d: %d %v, want %d", i+1, resp.StatusCode, resp.Cookies(), want)
		}
	}
	out, errOut, code := cli(nil, "panel")
	if code != 0 || !strings.HasPrefix(out, "http://"+strings.TrimSuffix(d.addr, "/")+"/?login=") {
		t.Fatalf("ava panel: exit %d\n%s\n%s", code, out, errOut)
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
