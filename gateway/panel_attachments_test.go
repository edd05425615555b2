package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestPanelAttachesAFile: a file chosen with the composer's button shows
// in its strip, goes with the message, reaches the model (the scripted
// model echoes what it received) and shows as the sent message's
// attachment; a file of an unknown type is refused with the daemon's
// reason and is not sent.
func TestPanelAttachesAFile(t *testing.T) {
	chrome := findChromium(t)
	e := newEnv(t, envOptions{script: echoScript})
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.md")
	must(t, os.WriteFile(notes, []byte("# Plan\nthe secret word is marmalade\n"), 0o600))
	bin := filepath.Join(dir, "tool.bin")
	must(t, os.WriteFile(bin, []byte("\x00\x01\x02\xff\xfe binary"), 0o600))

	b := newBrowser(t, chrome)
	b.run(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(e.loginURL()), chromedp.WaitVisible(chromedp.CSS(`textarea`)))
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`.composer input[type=file]`), []string{bin}))
	b.waitText(`.composer .attachment-strip .error`, "tool.bin (application/octet-stream): unknown type")
	if n := evalAs[int](b, `document.querySelectorAll('.composer .attachment').length`); n != 0 {
		t.Fatalf("a refused file is in the strip (%d)", n)
	}
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`.composer input[type=file]`), []string{notes}))
	b.waitText(`.composer .attachment`, "notes.md")
	b.shot(shotDir(t), "desktop-attachment-strip.png")
	b.run(chromedp.SendKeys(chromedp.CSS(`textarea`), "read my notes"), chromedp.KeyEvent(kb.Enter))
	// The answer is what the model received: the text and the file's
	// content, inline, as untrusted.
	b.waitText(`.messages [data-kind="assistant"]`, "the secret word is marmalade")
	answer := b.texts(`.messages [data-kind="assistant"]`)
	if got := strings.Join(answer, "\n"); !strings.Contains(got, "GOT: read my notes") || !strings.Contains(got, `untrusted source="attachment notes.md"`) {
		t.Errorf("the model got: %s", got)
	}
	// The sent message shows the person's text and the file as its strip.
	b.waitText(`.messages [data-kind="user"] [data-kind="attachments"]`, "notes.md")
	user := evalAs[map[string]string](b, `(() => {
		const m = document.querySelector('.messages [data-kind="user"]');
		const own = [...m.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
		const d = m.querySelector('[data-kind="attachments"] details');
		d.open = true;
		return {own, chip: m.querySelector('.attachment').textContent.replace(/\s+/g, ' ').trim(), content: d.querySelector('pre').textContent};
	})()`)
	if user["own"] != "read my notes" || !strings.HasPrefix(user["chip"], "notes.md 36 B") || user["content"] != "# Plan\nthe secret word is marmalade\n" {
		t.Errorf("the sent message: %v", user)
	}
	if n := evalAs[int](b, `document.querySelectorAll('.composer .attachment').length`); n != 0 {
		t.Errorf("the strip was not emptied after sending (%d)", n)
	}
	b.shot(shotDir(t), "desktop-attachment.png")
}
