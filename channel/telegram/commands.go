package telegram

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/avaagent/ava/channel/terminal"
)

const helpText = `I'm Ava. Write to me and I answer, handing bigger work to subagents.

/status — what runs in this chat: the request and its subagents
/stop — stop the running request (and its subagents); /stop S-xxxxxx stops one subagent
/logs S-xxxxxx — the last steps of a subagent
/new — start a fresh conversation
/help — this text`

// command runs one of the chat commands.
func (c *Channel) command(ctx context.Context, ch *chat, m *models.Message, name, args string) error {
	key, err := c.session(ctx, ch.id)
	if err != nil {
		return err
	}
	switch name {
	case "start", "help":
		return c.send(ctx, ch, helpText)
	case "status", "ps":
		return c.send(ctx, ch, c.status(key))
	case "stop":
		return c.send(ctx, ch, c.stop(key, args))
	case "logs":
		return c.send(ctx, ch, c.logs(ctx, key, args))
	case "new":
		fresh := fmt.Sprintf("%s:%d", sessionKey(ch.id), time.Now().Unix())
		if err := c.cfg.Store.SetChatSession(ctx, ChannelName, ch.id, fresh); err != nil {
			return err
		}
		return c.send(ctx, ch, "Started a fresh conversation. (The previous one stays in the record: "+key+".)")
	}
	return c.send(ctx, ch, "I don't know /"+name+". "+helpText)
}

// status describes the chat's session and its running subagents.
func (c *Channel) status(key string) string {
	lines := []string{"Session " + key + ": " + string(c.cfg.Sessions.State(key))}
	subs := c.cfg.Sessions.Subagents(key)
	if len(subs) == 0 {
		lines = append(lines, "No subagents running.")
	}
	for _, h := range subs {
		lines = append(lines, terminal.StatusLine(h.Status()))
	}
	return strings.Join(lines, "\n")
}

// stop stops the chat's running request, or one of its subagents.
func (c *Channel) stop(key, id string) string {
	if id == "" {
		stopped, err := c.cfg.Sessions.Stop(key)
		switch {
		case err != nil:
			return "Could not stop: " + err.Error()
		case !stopped:
			return "Nothing was running."
		}
		return "Stopped."
	}
	if !c.ownSubagent(key, id) {
		return "No subagent " + id + " is running in this chat (see /status)."
	}
	if _, err := c.cfg.Sessions.Stop("ava:subagent:" + id); err != nil {
		return "Could not stop " + id + ": " + err.Error()
	}
	return "Stopped " + id + "."
}

// ownSubagent reports whether id is a running subagent of the chat's
// session: a chat stops and reads only its own.
func (c *Channel) ownSubagent(key, id string) bool {
	for _, h := range c.cfg.Sessions.Subagents(key) {
		if strings.EqualFold(h.ID(), id) {
			return true
		}
	}
	return false
}

// logs shows the last steps of one of the chat's subagents.
func (c *Channel) logs(ctx context.Context, key, id string) string {
	if id == "" {
		return "Which subagent? /logs S-xxxxxx (see /status)."
	}
	lines, err := c.cfg.Sessions.Trace(ctx, key, id, 10)
	if err != nil {
		return "No steps to show for " + id + ": " + err.Error()
	}
	return id + ", last steps:\n" + strings.Join(lines, "\n")
}

// answerCallback answers a button press. No button this channel sends is
// live yet (spawn confirmations come with the confirmation flow), so a
// press is told so instead of being ignored.
func (c *Channel) answerCallback(ctx context.Context, q *models.CallbackQuery) error {
	ch := &chat{id: q.From.ID, limiter: c.newChatLimiter()}
	return c.call(ctx, ch, func(ctx context.Context) error {
		_, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID,
			Text: "This button is no longer active."})
		return err
	})
}
