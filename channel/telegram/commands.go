package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/lifecycle"
)

const helpText = `I'm Ava. Write to me and I answer, handing bigger work to subagents.

/status — what runs in this chat: the request and its subagents; /status S-xxxxxx one subagent, running or finished
/stop — stop the running request (and its subagents); /stop S-xxxxxx stops one subagent
/logs S-xxxxxx — the last steps of a subagent
/result S-xxxxxx — a finished subagent's whole result
/send S-xxxxxx message — steer a running subagent (it reads it before its next step) or follow up a finished one
/answer [Q-xxxxxx] text — answer a subagent's question
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
		return c.send(ctx, ch, c.status(ctx, key, args))
	case "stop":
		return c.send(ctx, ch, c.stop(ctx, key, args))
	case "logs":
		return c.send(ctx, ch, c.logs(ctx, key, args))
	case "result":
		return c.result(ctx, ch, key, args)
	case "send":
		return c.send(ctx, ch, c.steer(ctx, key, args, userName(m)))
	case "answer":
		return c.send(ctx, ch, c.answerQuestion(key, args))
	case "new":
		fresh := fmt.Sprintf("%s:%x", sessionKey(ch.id), time.Now().UnixNano())
		if err := c.updates.SetChatSession(ctx, ChannelName, ch.id, fresh); err != nil {
			return err
		}
		return c.send(ctx, ch, "Started a fresh conversation. (The previous one stays in the record: "+key+".)")
	}
	return c.send(ctx, ch, "I don't know /"+name+". "+helpText)
}

// steer sends a message to one of the chat's subagents: into its
// conversation while it runs, as a follow-up once it ended.
func (c *Channel) steer(ctx context.Context, key, args, user string) string {
	id, msg, _ := strings.Cut(strings.TrimSpace(args), " ")
	if id == "" || strings.TrimSpace(msg) == "" {
		return "Usage: /send S-xxxxxx message"
	}
	sa, ok := c.ownSubagent(ctx, key, id)
	if !ok {
		return notHere(id)
	}
	if _, err := c.rt.Send(ctx, sa.SessionKey, strings.TrimSpace(msg), ava.SendOptions{Steer: true, User: user}); err != nil {
		return "Could not send to " + sa.ID + ": " + err.Error()
	}
	if !sa.Status.IsActive() {
		return "Sent to " + sa.ID + " as a follow-up: it resumes with its conversation."
	}
	return "Sent to " + sa.ID + ": it reads it before its next step."
}

// answerQuestion answers a subagent's question in the chat's session.
func (c *Channel) answerQuestion(key, args string) string {
	id, text := "", strings.TrimSpace(args)
	if first, rest, _ := strings.Cut(text, " "); len(first) == 8 && strings.EqualFold(first[:2], "Q-") {
		id, text = first, strings.TrimSpace(rest)
	}
	if text == "" {
		return "Usage: /answer [Q-xxxxxx] your answer"
	}
	q, err := c.rt.Answer(key, id, text)
	if err != nil {
		return "Could not answer: " + err.Error()
	}
	return "Sent your answer to " + q.SubagentID + "."
}

// status describes the chat's session and its running subagents, or one
// of its subagents (running or finished), with the figures every
// surface shows (ava ps, the panel, the API).
func (c *Channel) status(ctx context.Context, key, id string) string {
	if id != "" {
		sa, ok := c.ownSubagent(ctx, key, id)
		if !ok {
			return notHere(id)
		}
		return terminal.StatusLine(sa)
	}
	lines := []string{"Session " + key + ": " + string(c.rt.State(key))}
	subs, err := c.rt.Subagents(ctx, ava.SubagentFilter{Parent: key, Status: lifecycle.Active})
	if err != nil {
		return strings.Join(append(lines, "Could not list the subagents: "+err.Error()), "\n")
	}
	if len(subs) == 0 {
		lines = append(lines, "No subagents running.")
	}
	for _, sa := range subs {
		lines = append(lines, terminal.StatusLine(sa))
	}
	return strings.Join(lines, "\n")
}

// stop stops the chat's running request, or one of its subagents.
func (c *Channel) stop(ctx context.Context, key, id string) string {
	if id == "" {
		stopped, err := c.rt.Stop(ctx, key)
		switch {
		case errors.Is(err, ava.ErrNotFound), err == nil && !stopped:
			return "Nothing was running." // a chat that never wrote has no session yet
		case err != nil:
			return "Could not stop: " + err.Error()
		}
		return "Stopped."
	}
	sa, ok := c.ownSubagent(ctx, key, id)
	if !ok {
		return notHere(id)
	}
	stopped, err := c.rt.Stop(ctx, sa.SessionKey)
	switch {
	case err != nil:
		return "Could not stop " + sa.ID + ": " + err.Error()
	case !stopped:
		return sa.ID + " was not running (" + string(sa.Status) + ")."
	}
	return "Stopped " + sa.ID + "."
}

// ownSubagent returns subagent id when it is one the chat's session
// started: a chat stops, steers and reads only its own.
func (c *Channel) ownSubagent(ctx context.Context, key, id string) (ava.Subagent, bool) {
	sa, err := c.rt.Subagent(ctx, id)
	if err != nil || sa.Parent != key {
		return ava.Subagent{}, false
	}
	return sa, true
}

// notHere answers a subagent ID that is not one of the chat's.
func notHere(id string) string {
	return "No subagent " + id + " in this chat (see /status)."
}

// logs shows the last steps of one of the chat's subagents.
func (c *Channel) logs(ctx context.Context, key, id string) string {
	if id == "" {
		return "Which subagent? /logs S-xxxxxx (see /status)."
	}
	lines, err := c.rt.Trace(ctx, key, id, 10)
	switch {
	case ava.KindOf(err) == ava.NotFound:
		return notHere(id)
	case err != nil:
		return "No steps to show for " + id + ": " + err.Error()
	case len(lines) == 0:
		return "No steps recorded for " + id + " yet."
	}
	return id + ", last steps:\n" + strings.Join(lines, "\n")
}

// propose shows a spawn proposal with Yes and No buttons; a typed answer
// ("yes", "no thanks", "yes but use haiku") works too.
func (c *Channel) propose(ctx context.Context, ch *chat, ev event.Event) {
	var p event.SpawnProposedContent
	if ev.Decode(&p) != nil {
		return
	}
	keyboard := &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
		{Text: "Yes", CallbackData: "spawn:" + p.PendingID + ":yes"},
		{Text: "No", CallbackData: "spawn:" + p.PendingID + ":no"},
	}}}
	words := `"yes", "no", "yes but use haiku", "ok, max $1"`
	if p.Kind == ava.KindProcess {
		words = `"yes", "no", "yes but only 30 seconds"`
	}
	text := p.Text + "\n\n(Press a button, or answer in words: " + words + ".)"
	if _, err := c.sendParts(ctx, ch, plainParts(text), keyboard); err != nil {
		c.log.Error("telegram: could not show a proposal", "chat", ch.id, "pending", p.PendingID, "err", err)
	}
}

// answerCallback answers a button press: a Yes or No on one of the chat's
// proposals decides it; a press on an expired, answered or foreign one,
// or on anything else, is answered too, never ignored.
func (c *Channel) answerCallback(ctx context.Context, q *models.CallbackQuery) error {
	chatID := callbackChat(q)
	ch := &chat{id: chatID, limiter: c.newChatLimiter()}
	reply := "This button is no longer active."
	if id, yes, ok := parseButton(q.Data); ok && (c.allows(chatID) || c.allows(q.From.ID)) {
		key, err := c.session(ctx, chatID)
		if err != nil {
			return err
		}
		reply = c.decide(ctx, key, id, yes)
		if err := c.send(ctx, ch, reply); err != nil {
			return err
		}
	}
	return c.call(ctx, ch, func(ctx context.Context) error {
		_, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: reply})
		return err
	})
}

// decide applies a Yes or No pressed on proposal id in the chat's
// session and says, in the chat's words, what happened: started, not
// started, or why nothing was decided (expired, answered already, not
// this chat's).
func (c *Channel) decide(ctx context.Context, key, id string, yes bool) string {
	d := ava.Rejected
	if yes {
		d = ava.Confirmed
	}
	res, err := c.rt.Decide(ctx, key, id, d, ava.Change{})
	switch {
	case errors.Is(err, ava.ErrExpired):
		return "This proposal expired; ask again if you still want it."
	case errors.Is(err, ava.ErrDecided):
		return "This proposal was already answered."
	case errors.Is(err, ava.ErrNotFound):
		return "This proposal is not one of this chat's."
	case err != nil:
		return "Could not apply that: " + err.Error()
	case res.Decision == string(ava.Rejected) && res.Proposal.Kind == ava.KindProcess:
		return "Not run."
	case res.Decision == string(ava.Rejected):
		return "Not started."
	case res.Proposal.Kind == ava.KindProcess:
		return "Running it; its output comes in the answer."
	}
	return "Started " + strings.Join(res.SubagentIDs, ", ") + "."
}

// parseButton reads "spawn:P-xxxxxx:yes|no".
func parseButton(data string) (id string, yes, ok bool) {
	parts := strings.Split(data, ":")
	if len(parts) != 3 || parts[0] != "spawn" || (parts[2] != "yes" && parts[2] != "no") {
		return "", false, false
	}
	return parts[1], parts[2] == "yes", true
}
