package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/orchestrator"
)

// images is an orchestrator.ImageSource over a map.
type images map[string][]byte

func (im images) Image(_ context.Context, id string) (string, []byte, error) {
	if b, ok := im[id]; ok {
		return "image/png", b, nil
	}
	return "", nil, errors.New("no such attachment")
}

// imageCount counts the image blocks of msgs holding bytes.
func imageCount(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		for _, b := range m.Images() {
			if len(b.ImageData) > 0 {
				n++
			}
		}
	}
	return n
}

// A message merged into the next keeps its image once: the stored
// message's image (kept by reference) leaves the history with its text,
// and the merged turn's message carries it; a later turn reads it back
// from the store.
func TestMergedTurnKeepsItsImageOnce(t *testing.T) {
	const id = "A-0123456789ab"
	h := newTurnHarness(t, false, func(c *orchestrator.Config) {
		c.Model.Images = true
		c.Images = images{id: []byte("png-bytes")}
	})
	const session = "ava:test:mergedimg"
	first := "[Attachment " + id + ": a.png · image/png · 9 bytes, the person's image]"
	cut, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("merged: %w (%w)", agent.ErrCancelled, orchestrator.ErrDiscarded))
	if _, _, err := h.o.AskMessage(cut, session, "", orchestrator.Message{Text: first}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.o.AskMessage(context.Background(), session, "", orchestrator.Message{Text: first + "\n\nwhat is it?", Stored: []string{first}}); err != nil {
		t.Fatal(err)
	}
	reqs := h.model.requests()
	if n := imageCount(reqs[len(reqs)-1].Messages); n != 1 {
		t.Fatalf("merged prompt holds %d images, want 1: %+v", n, reqs[len(reqs)-1].Messages)
	}
	if _, err := h.o.Ask(context.Background(), session, "", "and now?"); err != nil {
		t.Fatal(err)
	}
	reqs = h.model.requests()
	if n := imageCount(reqs[len(reqs)-1].Messages); n != 1 {
		t.Fatalf("the next turn's prompt holds %d images, want 1 (read back by reference)", n)
	}
}
