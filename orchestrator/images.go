package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/avaagent/ava/attach"
	"github.com/avaagent/ava/llm"
)

// ImageSource reads the images people attached, by attachment ID (the
// attachment store has it, through app).
type ImageSource interface {
	Image(ctx context.Context, id string) (mediaType string, data []byte, err error)
}

// personMessage is the person's text as the model gets it, and as the
// history keeps it. Each image the text attaches (its attachment line,
// attach.Line) follows the text as an image block when the model takes
// images (llm.Model.Images) and the orchestrator has an ImageSource; the
// history keeps the block by reference (package transcript), so stored
// is the text and those blocks. Otherwise the model gets the text and a
// note that it is not shown the images, which stay the files their
// lines name (the workspace fallback): stored is the text alone.
func (o *Orchestrator) personMessage(ctx context.Context, text string) (input, stored llm.Message) {
	input, stored = llm.UserText(text), llm.UserText(text)
	refs := attach.ImageRefs(text)
	if len(refs) == 0 {
		return input, stored
	}
	if !o.cfg.Model.Images || o.cfg.Images == nil {
		input.Content = append(input.Content, llm.Text(o.noImagesNote(refs)))
		return input, stored
	}
	for _, ref := range refs {
		typ, data, err := o.cfg.Images.Image(ctx, ref.ID)
		if err != nil {
			o.log.Warn("an attached image could not be read", "attachment", ref.ID, "err", err)
			input.Content = append(input.Content, llm.Text(fmt.Sprintf("[Ava] The image %s could not be read (%v).", ref.ID, err)))
			continue
		}
		input.Content = append(input.Content, llm.Image(typ, data, ref.ID))
		stored.Content = append(stored.Content, llm.Image(typ, nil, ref.ID))
	}
	return input, stored
}

// noImagesNote tells the model it is not shown the images refs.
func (o *Orchestrator) noImagesNote(refs []attach.ImageRef) string {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return fmt.Sprintf("[Ava] The model %s does not take images: %s reach you only as the files their attachment lines name (read them with the tools where a line gives a path).",
		o.modelName(), strings.Join(ids, ", "))
}

// withImages is the loaded history with its stored images' bytes read
// again (the history keeps them by reference): an image that cannot be
// read any more, or that the model could not take, becomes a note.
func (o *Orchestrator) withImages(ctx context.Context, history []llm.Message) []llm.Message {
	for i, m := range history {
		cloned := false
		for j, b := range m.Content {
			if b.Type != llm.BlockImage || len(b.ImageData) > 0 {
				continue
			}
			if !cloned {
				history[i].Content, cloned = slices.Clone(m.Content), true
			}
			history[i].Content[j] = o.storedImage(ctx, b)
		}
	}
	return history
}

// storedImage is a stored image block as the model gets it: with its
// bytes, or a note saying why it is not shown.
func (o *Orchestrator) storedImage(ctx context.Context, b llm.Block) llm.Block {
	if !o.cfg.Model.Images || o.cfg.Images == nil || b.Ref == "" {
		return llm.Text(fmt.Sprintf("[Ava] An image was attached here (%s, %s); the model %s is not shown images.", b.Ref, b.MediaType, o.modelName()))
	}
	typ, data, err := o.cfg.Images.Image(ctx, b.Ref)
	if err != nil {
		o.log.Warn("a stored image could not be read", "attachment", b.Ref, "err", err)
		return llm.Text(fmt.Sprintf("[Ava] An image was attached here (%s, %s); it can no longer be read (%v).", b.Ref, b.MediaType, err))
	}
	return llm.Image(typ, data, b.Ref)
}

// isImageOf reports whether b is an image block that one of text's
// attachment lines attaches.
func isImageOf(b llm.Block, text string) bool {
	if b.Type != llm.BlockImage || b.Ref == "" {
		return false
	}
	return slices.ContainsFunc(attach.ImageRefs(text), func(r attach.ImageRef) bool { return r.ID == b.Ref })
}

// modelName is the model's full name ("" without one).
func (o *Orchestrator) modelName() string {
	if o.cfg.Model.Provider == nil {
		return o.cfg.Model.ID
	}
	return o.cfg.Model.Name()
}
