package main_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/avaagent/ava/gateway/client"
)

// TestChatSessionShowsEarlierConversation: `ava chat --session K` opens
// with the session's earlier conversation (the person's messages and
// the answers), in this process's runtime and on a daemon, then goes on
// live.
func TestChatSessionShowsEarlierConversation(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		root := t.TempDir()
		env := map[string]string{"AVA_DATA_ROOT": root}
		if _, errOut, code := ava(t, env, "run", "--offline", "--yes", "--session", "ava:cli:earlier", "remember the lighthouse"); code != 0 {
			t.Fatalf("first run: exit %d\n%s", code, errOut)
		}
		cmd := exec.Command(avaBin, "chat", "--offline", "--session", "ava:cli:earlier")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AVA_DATA_ROOT=" + root, "AVA_WORKSPACE=" + t.TempDir(),
			"AVA_CONFIRM=never", "TERM=xterm-256color"}
		c := startChat(t, cmd)
		at := c.scr.waitFor(t, 0, "you› remember the lighthouse")
		at = c.scr.waitFor(t, at, "ava› [offline demo model] I will hand your message")
		at = c.scr.waitFor(t, at, "ran and ended with status success")
		_, _ = c.tty.Write([]byte{3})
		at = c.scr.waitFor(t, at, "Ctrl-C again")
		_, _ = c.tty.Write([]byte{3})
		c.exit(t, at, "continue with ava chat --offline --session ava:cli:earlier")
	})
	t.Run("daemon", func(t *testing.T) {
		env, _ := daemonEnv(t)
		d := startDaemon(t, env)
		st, err := d.c.Chat(bg(t), client.ChatRequest{Message: "hello from the web"})
		if err != nil {
			t.Fatal(err)
		}
		key := st.SessionKey
		drain(t, st)
		cmd := exec.Command(avaBin, "chat", "--session", key)
		cmd.Env = append(env, "AVA_ADDR="+d.addr, "TERM=xterm-256color")
		c := startChat(t, cmd)
		at := c.scr.waitFor(t, 0, "you› hello from the web")
		at = c.scr.waitFor(t, at, "ava› hello back")
		time.Sleep(300 * time.Millisecond)
		st, err = d.c.Chat(bg(t), client.ChatRequest{SessionKey: key, Message: "and now live"})
		if err != nil {
			t.Fatal(err)
		}
		drain(t, st)
		at = c.scr.waitFor(t, at, "you› and now live")
		_, _ = c.tty.Write([]byte{3})
		at = c.scr.waitFor(t, at, "Ctrl-C again")
		_, _ = c.tty.Write([]byte{3})
		c.exit(t, at, "session "+key+" lives on the daemon")
	})
}
