package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avaagent/ava/gateway/client"
)

// echoScript answers every message with what the model received.
const echoScript = `conversations:
  - turns:
      - text: "GOT: {{input}}"
      - text: "GOT: {{input}}"
`

// pngBytes is a 1×1 PNG.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")

// upload posts files (name → content) to /api/attachments.
func (e *env) upload(files [][2]string) (int, string) {
	e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range files {
		w, err := mw.CreateFormFile("file", f[0])
		must(e.t, err)
		_, _ = io.WriteString(w, f[1])
	}
	must(e.t, mw.Close())
	req, err := http.NewRequest("POST", e.ts.URL+"/api/attachments", &body)
	must(e.t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(e.authorize(req))
	must(e.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stored lists the attachments folder of the data root.
func (e *env) stored() []string {
	entries, _ := os.ReadDir(filepath.Join(e.rt.Config().DataRoot, "attachments"))
	var out []string
	for _, d := range entries {
		out = append(out, d.Name())
	}
	return out
}

// TestAttachedFilesReachTheModel: a text file reaches the model inline
// as untrusted content and an image is placed in the workspace (and
// given as an image block, images_test.go at the root), the message
// naming where; the files can be downloaded as attached.
func TestAttachedFilesReachTheModel(t *testing.T) {
	e := newEnv(t, envOptions{script: echoScript})
	code, body := e.upload([][2]string{{"notes.txt", "the secret word is marmalade\n"}, {"dir/pic.png", string(pngBytes)}})
	var got client.AttachResponse
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &got) != nil || len(got.Attachments) != 2 {
		t.Fatalf("upload: %d %s", code, body)
	}
	text, img := got.Attachments[0], got.Attachments[1]
	if text.Kind != "text" || text.Type != "text/plain" || img.Kind != "image" || img.Type != "image/png" || img.Name != "pic.png" || img.Size != int64(len(pngBytes)) {
		t.Fatalf("records: %+v", got.Attachments)
	}
	_, _, res := e.chat(client.ChatRequest{Message: "read these", Attachments: []string{text.ID, img.ID}})
	wantIn := []string{
		"GOT: read these\n\n[Attachment " + text.ID + ": notes.txt · text/plain · 29 bytes",
		"<untrusted source=\"attachment notes.txt\">\nthe secret word is marmalade\n\n</untrusted>",
		"[Attachment " + img.ID + ": pic.png · image/png · ",
		"shown to you as an image after this message if this model takes images; also in the workspace at .ava/attachments/" + img.ID + "/pic.png for the tools]",
	}
	for _, w := range wantIn {
		if !strings.Contains(res.Text, w) {
			t.Errorf("the model did not get %q; it got:\n%s", w, res.Text)
		}
	}
	placed, err := os.ReadFile(filepath.Join(e.rt.Config().Workspace, ".ava", "attachments", img.ID, "pic.png"))
	if err != nil || !bytes.Equal(placed, pngBytes) {
		t.Errorf("the image in the workspace: %v", err)
	}
	resp, b := e.doFull("GET", "/api/attachments/"+text.ID, "", nil)
	if resp.StatusCode != 200 || b != "the secret word is marmalade\n" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment;") {
		t.Errorf("download: %d %q %v", resp.StatusCode, b, resp.Header)
	}
}

// TestBadAttachmentsAreRefusedWholly: too many, too big, empty or of an
// unknown type is a 400 naming the problem, and nothing of the upload
// is stored; a message naming an unknown attachment is refused before
// it reaches the model.
func TestBadAttachmentsAreRefusedWholly(t *testing.T) {
	e := newEnv(t, envOptions{script: echoScript, env: map[string]string{"AVA_ATTACH_MAX_FILES": "2", "AVA_ATTACH_MAX_BYTES": "1000"}})
	for _, tc := range []struct {
		name  string
		files [][2]string
		want  string
	}{
		{"too many", [][2]string{{"a.txt", "a"}, {"b.txt", "b"}, {"c.txt", "c"}}, "3 files, at most 2 at once (AVA_ATTACH_MAX_FILES)"},
		{"too big", [][2]string{{"a.txt", "fine"}, {"big.txt", strings.Repeat("x", 1001)}}, "big.txt: over the limit of 1000 bytes a file (AVA_ATTACH_MAX_BYTES)"},
		{"unknown type", [][2]string{{"a.txt", "fine"}, {"x.zip", "PK\x03\x04\x00\x00\xff\xfe"}}, "x.zip (application/zip): unknown type"},
		{"empty", [][2]string{{"a.txt", ""}}, "a.txt: empty"},
		{"no file", nil, "no file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.upload(tc.files)
			wantError(t, code, body, http.StatusBadRequest, tc.want)
			if s := e.stored(); len(s) != 0 {
				t.Fatalf("a refused upload left %v", s)
			}
		})
	}
	code, body := e.do("POST", "/api/chat", `{"message":"hi","attachments":["A-000000000000"]}`, nil)
	wantError(t, code, body, http.StatusNotFound, "attachment A-000000000000")
	code, body = e.do("POST", "/api/chat", `{"message":"hi","attachments":["../../etc"]}`, nil)
	wantError(t, code, body, http.StatusNotFound, "not an attachment ID")
	code, body = e.do("POST", "/api/chat", `{"message":"hi","attachments":["A-1","A-2","A-3"]}`, nil)
	wantError(t, code, body, http.StatusBadRequest, "at most 2 a message")
}
