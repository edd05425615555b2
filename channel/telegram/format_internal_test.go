package telegram

import (
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"
	"github.com/google/go-cmp/cmp"
)

// TestAnswerPartsClipEntities: an answer longer than one message is cut
// at a paragraph, and each part's entities are offset from its own
// start; a code block cut in two is a code block in both parts.
func TestAnswerPartsClipEntities(t *testing.T) {
	para := strings.Repeat("word ", 700)          // 3,500 characters
	code := strings.Repeat("line of code\n", 400) // 5,200
	src := "**" + "é" + "**\n\n" + para + "\n\n```sh\n" + code + "```\n\n😀 *end*"
	parts := answerParts(src)
	if len(parts) != 3 {
		t.Fatalf("%d parts, want 3", len(parts))
	}
	for i, p := range parts {
		if n := units(p.text); n > MaxMessage {
			t.Fatalf("part %d has %d units", i, n)
		}
	}
	want := [][]models.MessageEntity{
		{{Type: "bold", Offset: 0, Length: 1}},
		{{Type: "pre", Offset: 0, Length: units(parts[1].text), Language: "sh"}},
		{{Type: "pre", Offset: 0, Length: units(strings.Split(parts[2].text, "\n\n")[0]), Language: "sh"}, {Type: "italic", Offset: units(parts[2].text) - 3, Length: 3}},
	}
	for i := range want {
		if diff := cmp.Diff(want[i], parts[i].entities); diff != "" {
			t.Errorf("part %d's entities (-want +got):\n%s", i, diff)
		}
	}
}
