package telegram

import (
	"slices"

	"github.com/go-telegram/bot/models"

	"github.com/avaagent/ava/channel/markdown"
)

// message is one Telegram message's text and its entities (offsets and
// lengths in UTF-16 code units, as the Bot API counts them).
type message struct {
	text     string
	entities []models.MessageEntity
}

// same reports whether m and o would show the same.
func (m message) same(o message) bool {
	return m.text == o.text && slices.Equal(m.entities, o.entities)
}

// plainParts is text as plain messages, split at Telegram's limit.
func plainParts(text string) []message {
	var out []message
	for _, r := range splitRanges(text, MaxMessage) {
		out = append(out, message{text: text[r[0]:r[1]]})
	}
	return out
}

// answerParts is a model's Markdown answer as Telegram shows it: the text
// a person reads (package markdown) with entities for bold, italic,
// strikethrough, code, code blocks (with their language) and links to
// http(s) addresses, split at Telegram's limit with each part's entities
// clipped to it. Entities, unlike parse_mode, cannot fail on unbalanced
// model text: whatever the model wrote, the message is sent.
func answerParts(src string) []message {
	t := markdown.Parse(src)
	var out []message
	for _, r := range splitRanges(t.Plain, MaxMessage) {
		out = append(out, message{text: t.Plain[r[0]:r[1]], entities: entities(t, r[0], r[1])})
	}
	return out
}

// entityTypes are the entity type of each style.
var entityTypes = map[markdown.Style]models.MessageEntityType{
	markdown.Bold:   models.MessageEntityTypeBold,
	markdown.Italic: models.MessageEntityTypeItalic,
	markdown.Strike: models.MessageEntityTypeStrikethrough,
	markdown.Code:   models.MessageEntityTypeCode,
	markdown.Pre:    models.MessageEntityTypePre,
	markdown.Link:   models.MessageEntityTypeTextLink,
}

// entities are the spans of t within bytes [from, to) of its text, as
// entities of the message that holds those bytes, sorted by offset.
func entities(t markdown.Text, from, to int) []models.MessageEntity {
	var out []models.MessageEntity
	for _, s := range t.Spans {
		start, end := max(s.Start, from), min(s.End, to)
		if end <= start {
			continue
		}
		e := models.MessageEntity{Type: entityTypes[s.Style], Offset: units(t.Plain[from:start]), Length: units(t.Plain[start:end])}
		switch s.Style {
		case markdown.Pre:
			e.Language = s.Lang
		case markdown.Link:
			e.URL = s.URL
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b models.MessageEntity) int {
		if a.Offset != b.Offset {
			return a.Offset - b.Offset
		}
		return b.Length - a.Length // the outer one first
	})
	return out
}
