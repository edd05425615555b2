package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/avaagent/ava/internal/wait"
	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"golang.org/x/time/rate"
)

// MaxMessage is Telegram's limit on a message's text, in UTF-16 units.
const MaxMessage = 4096

// maxRetries bounds how often one call is retried after a 429.
const maxRetries = 5

// chatLimiter paces the calls to one chat (about one a second, with a
// small burst), under the global limiter.
type chatLimiter struct{ *rate.Limiter }

func (c *Channel) newChatLimiter() *chatLimiter {
	return &chatLimiter{rate.NewLimiter(rate.Every(c.cfg.ChatInterval), 3)}
}

// call makes one Bot API call for a chat, paced per chat and globally,
// and waits out 429s (their retry_after) before trying again.
func (c *Channel) call(ctx context.Context, ch *chat, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		if err := ch.limiter.Wait(ctx); err != nil {
			return err
		}
		if err := c.global.Wait(ctx); err != nil {
			return err
		}
		err := fn(ctx)
		var tooMany *bot.TooManyRequestsError
		if !errors.As(err, &tooMany) || attempt >= maxRetries {
			return err
		}
		pause := time.Duration(max(tooMany.RetryAfter, 1)) * time.Second
		c.log.Info("telegram: rate limited; waiting", "chat", ch.id, "retry_after", pause)
		if !wait.Sleep(ctx, pause) {
			return ctx.Err()
		}
	}
}

// send sends text to the chat as plain text (so no model output can make
// it fail), split into messages at Telegram's limit.
func (c *Channel) send(ctx context.Context, ch *chat, text string) error {
	_, err := c.sendParts(ctx, ch, plainParts(text), nil)
	return err
}

// sendParts sends the messages of one text in order; the first one
// carries markup when given. It returns the first message's ID.
func (c *Channel) sendParts(ctx context.Context, ch *chat, parts []message, markup models.ReplyMarkup) (int, error) {
	first := 0
	for i, part := range parts {
		params := &bot.SendMessageParams{ChatID: ch.id, Text: part.text, Entities: part.entities}
		if i == 0 && markup != nil {
			params.ReplyMarkup = markup
		}
		var sent *models.Message
		err := c.call(ctx, ch, func(ctx context.Context) error {
			var err error
			sent, err = c.bot.SendMessage(ctx, params)
			return err
		})
		if err != nil {
			return first, fmt.Errorf("send to chat %d: %w", ch.id, err)
		}
		if i == 0 && sent != nil {
			first = sent.ID
		}
	}
	return first, nil
}

// edit replaces a message's text and entities with m (one part: the rest
// is sent when the answer is final).
func (c *Channel) edit(ctx context.Context, ch *chat, id int, m message) error {
	err := c.call(ctx, ch, func(ctx context.Context) error {
		_, err := c.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: ch.id, MessageID: id, Text: m.text, Entities: m.entities})
		return err
	})
	if err != nil && strings.Contains(err.Error(), "message is not modified") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("edit message %d in chat %d: %w", id, ch.id, err)
	}
	return nil
}

// typing shows the typing action in the chat (Telegram shows it for
// about five seconds).
func (c *Channel) typing(ctx context.Context, ch *chat) {
	err := c.call(ctx, ch, func(ctx context.Context) error {
		_, err := c.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: ch.id, Action: models.ChatActionTyping})
		return err
	})
	if err != nil && ctx.Err() == nil {
		c.log.Debug("telegram: typing action failed", "chat", ch.id, "err", err)
	}
}

// Split cuts text into parts of at most limit UTF-16 units (Telegram's
// measure), at a paragraph break if there is one in the part, else at a
// line break, else at a space, else anywhere (never inside a character).
// Empty text is one empty part.
func Split(text string, limit int) []string {
	var parts []string
	for _, r := range splitRanges(text, limit) {
		parts = append(parts, text[r[0]:r[1]])
	}
	return parts
}

// splitRanges is where Split cuts text: each part's byte range, without
// the spaces and line breaks around a cut.
func splitRanges(text string, limit int) [][2]int {
	var parts [][2]int
	start := 0
	for units(text[start:]) > limit {
		rest := text[start:]
		cut := fit(rest, limit)
		at := bestBreak(rest[:cut])
		if at <= 0 {
			at = cut
		}
		parts = append(parts, [2]int{start, start + len(strings.TrimRight(rest[:at], " \n"))})
		start += at + len(rest[at:]) - len(strings.TrimLeft(rest[at:], " \n"))
	}
	return append(parts, [2]int{start, start + len(strings.TrimRight(text[start:], " \n"))})
}

// units is text's length in UTF-16 code units.
func units(text string) int { return len(utf16.Encode([]rune(text))) }

// fit is the longest prefix of text (in bytes, on a character boundary)
// of at most limit UTF-16 units.
func fit(text string, limit int) int {
	n := 0
	for i, r := range text {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > limit {
			return i
		}
		n += w
	}
	return len(text)
}

// bestBreak is where to cut prefix: after its last paragraph break, else
// its last line break, else its last space; 0 when it has none past its
// first half (a cut there would leave tiny parts).
func bestBreak(prefix string) int {
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(prefix, sep); i > len(prefix)/2 {
			return i + len(sep)
		}
	}
	return 0
}
