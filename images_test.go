package ava_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm/llmfake"
)

// testPNG is a small real PNG.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// attachPNG stores a PNG and returns the message that attaches it.
func attachPNG(t *testing.T, rt *ava.Runtime, body []byte) (string, string) {
	t.Helper()
	ctx := testCtx(t)
	as, err := rt.Attach(ctx, []ava.AttachmentUpload{{Name: "chart.png", Body: bytes.NewReader(body)}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := rt.WithAttachments(ctx, "what is on this chart?", []string{as[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	return as[0].ID, msg
}

// ask sends message to key and waits for the answer.
func ask(t *testing.T, rt *ava.Runtime, key, message, model string) string {
	t.Helper()
	ctx := testCtx(t)
	turn, err := rt.Send(ctx, key, message, ava.SendOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res.Text
}

// An attached PNG reaches Anthropic's API as an image block and OpenAI's
// chat completions as an image_url part, through the real clients; the
// next turn, whose history is read back from the store (which keeps the
// image by reference), carries it again.
func TestAttachedImageReachesTheModelAsAnImage(t *testing.T) {
	body := testPNG(t)
	data := base64.StdEncoding.EncodeToString(body)
	for _, c := range []struct {
		name, model string
		serve       func(*testing.T) *llmfake.Server
		provider    func(c *config.Config, url string)
		// images are the request's images, as data (base64).
		images func(req llmfake.Request) []string
	}{
		{"anthropic", "anthropic/claude-sonnet-4-5", func(t *testing.T) *llmfake.Server { return llmfake.NewAnthropic(t) },
			func(c *config.Config, url string) { c.Anthropic = config.Provider{APIKey: "sk-ant-test", BaseURL: url} },
			func(req llmfake.Request) []string {
				var out []string
				for _, m := range req.Body["messages"].([]any) {
					content, _ := m.(map[string]any)["content"].([]any)
					for _, b := range content {
						b := b.(map[string]any)
						if b["type"] != "image" {
							continue
						}
						src := b["source"].(map[string]any)
						if src["type"] == "base64" && src["media_type"] == "image/png" {
							out = append(out, src["data"].(string))
						}
					}
				}
				return out
			}},
		{"openai", "openai/gpt-4.1", func(t *testing.T) *llmfake.Server { return llmfake.NewOpenAI(t) },
			func(c *config.Config, url string) {
				c.OpenAI = config.Provider{APIKey: "sk-test", BaseURL: url + "/v1"}
			},
			func(req llmfake.Request) []string {
				var out []string
				for _, m := range req.Body["messages"].([]any) {
					content, _ := m.(map[string]any)["content"].([]any)
					for _, p := range content {
						p := p.(map[string]any)
						if p["type"] != "image_url" {
							continue
						}
						url := p["image_url"].(map[string]any)["url"].(string)
						if d, ok := strings.CutPrefix(url, "data:image/png;base64,"); ok {
							out = append(out, d)
						}
					}
				}
				return out
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := c.serve(t)
			fake.Respond = func(llmfake.Request) llmfake.Turn { return llmfake.Turn{Text: "a red dot"} }
			rt := openTest(t, "turns:\n  - text: done\n", func(cfg *config.Config) { c.provider(cfg, fake.URL) })
			_, msg := attachPNG(t, rt, body)
			const key = "ava:test:img"
			if got := ask(t, rt, key, msg, c.model); got != "a red dot" {
				t.Fatalf("answer %q", got)
			}
			ask(t, rt, key, "and its colour?", c.model)
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for i, req := range reqs {
				if got := c.images(req); len(got) != 1 || got[0] != data {
					t.Errorf("request %d: images %d, want the PNG once (body %.300s)", i+1, len(got), req.Raw)
				}
			}
		})
	}
}

// A model that does not take images (not in llm.ImageModels) gets no
// image part: the text, its attachment line, and a note saying so; the
// image is in the workspace for the tools.
func TestImageToAModelWithoutImagesIsAFile(t *testing.T) {
	fake := llmfake.NewOpenAI(t)
	fake.Respond = func(llmfake.Request) llmfake.Turn { return llmfake.Turn{Text: "ok"} }
	rt := openTest(t, "turns:\n  - text: done\n", func(cfg *config.Config) {
		cfg.OpenAI = config.Provider{APIKey: "sk-test", BaseURL: fake.URL + "/v1"}
	})
	id, msg := attachPNG(t, rt, testPNG(t))
	if !strings.Contains(msg, ".ava/attachments/"+id+"/chart.png") {
		t.Fatalf("the line names no workspace file: %q", msg)
	}
	ask(t, rt, "ava:test:noimg", msg, "openai/llama3.2")
	raw := string(fake.Requests()[0].Raw)
	if strings.Contains(raw, "image_url") {
		t.Errorf("a model without images got an image part: %.400s", raw)
	}
	if !strings.Contains(raw, "does not take images") {
		t.Errorf("no note that the model is not shown the image: %.400s", raw)
	}
}

// The offline scripted model takes images and can say what it was shown.
func TestScriptedModelSeesTheImage(t *testing.T) {
	rt := openTest(t, "turns:\n  - text: 'images: {{images}}'\n")
	id, msg := attachPNG(t, rt, testPNG(t))
	got := ask(t, rt, "ava:test:offline", msg, "")
	if !strings.Contains(got, "image/png") || !strings.Contains(got, id) {
		t.Fatalf("the offline model did not see the image: %q", got)
	}
}
