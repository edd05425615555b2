package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/avaagent/ava"
)

// chatIdle is how long a chat's worker waits for more updates before it
// leaves (a new update starts another).
const chatIdle = time.Minute

// chat is one chat's worker: its updates, handled one at a time, in
// order. A message's answer streams in the background (answer), after
// the chat's earlier answers; the worker goes on to the next update.
type chat struct {
	id      int64
	updates chan ava.ChannelUpdate
	limiter *chatLimiter

	mu          sync.Mutex
	gen         uint64        // the number of the chat's newest answer
	tail        chan struct{} // closed when the newest answer has finished
	lastKey     string        // the session of the newest answer
	watchCancel context.CancelFunc
	watchDone   chan struct{} // the running subagent watcher's, if any
	handed      *reader       // the events a finished reader left to the next answer
}

// dispatch hands an update to its chat's worker, starting one if none
// runs; updates of one chat are handled in order, chats concurrently.
func (c *Channel) dispatch(ctx context.Context, u ava.ChannelUpdate) {
	c.mu.Lock()
	ch, ok := c.chats[u.ChatID]
	if !ok {
		ch = &chat{id: u.ChatID, updates: make(chan ava.ChannelUpdate, 256), limiter: c.newChatLimiter()}
		c.chats[u.ChatID] = ch
		c.wg.Go(func() { c.work(ctx, ch) })
	}
	c.mu.Unlock()
	select {
	case ch.updates <- u:
	case <-ctx.Done():
	}
}

// work handles a chat's updates until it has been idle for chatIdle or
// ctx is done. It leaves under the lock, so that no update is queued to a
// worker that has gone.
func (c *Channel) work(ctx context.Context, ch *chat) {
	idle := time.NewTimer(chatIdle)
	defer idle.Stop()
	for {
		select {
		case u := <-ch.updates:
			c.handleStored(ctx, ch, u)
			idle.Reset(chatIdle)
		case <-idle.C:
			c.mu.Lock()
			if len(ch.updates) == 0 && !ch.busy() {
				delete(c.chats, ch.id)
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			idle.Reset(chatIdle)
		case <-ctx.Done():
			return
		}
	}
}

// busy reports whether an answer or a subagent watcher runs for the chat.
func (ch *chat) busy() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.busyLocked()
}

// busyLocked is busy; the caller holds ch.mu.
func (ch *chat) busyLocked() bool {
	if ch.watchCancel != nil {
		return true
	}
	select {
	case <-ch.tail:
		return false
	default:
		return ch.tail != nil
	}
}

// handleStored handles one stored update and marks it handled: a command
// once answered, a message once the session has it (its answer streams
// after). An update that cannot be read is marked handled with an error
// in the log: it would fail again.
func (c *Channel) handleStored(ctx context.Context, ch *chat, su ava.ChannelUpdate) {
	u, err := decodeUpdate(su.Payload)
	if err != nil {
		c.log.Error("telegram: an update could not be read; skipped", "update", su.ID, "err", err)
	} else if err := c.handle(ctx, ch, u); err != nil {
		if ctx.Err() != nil {
			return // left pending: handled again at the next start
		}
		c.log.Error("telegram: handling an update failed", "update", su.ID, "chat", su.ChatID, "err", err)
	}
	if err := c.updates.UpdateHandled(context.WithoutCancel(ctx), ChannelName, su.ID); err != nil {
		c.log.Error("telegram: could not mark an update handled", "update", su.ID, "err", err)
	}
}

// handle answers one update.
func (c *Channel) handle(ctx context.Context, ch *chat, u *models.Update) error {
	switch {
	case u.CallbackQuery != nil:
		return c.answerCallback(ctx, u.CallbackQuery)
	case u.Message == nil:
		return nil
	}
	m := u.Message
	if !c.isAllowed(m) {
		return c.refuse(ctx, ch, m)
	}
	if m.Text == "" {
		return c.send(ctx, ch, unsupported(m))
	}
	if cmd, args, ok := command(m.Text); ok {
		return c.command(ctx, ch, m, cmd, args)
	}
	return c.converse(ctx, ch, m)
}

// isAllowed reports whether the message's chat or sender is allowed.
func (c *Channel) isAllowed(m *models.Message) bool {
	if c.allows(m.Chat.ID) {
		return true
	}
	return m.From != nil && c.allows(m.From.ID)
}

// refuse answers a chat that is not allowed, once a day, and logs it.
// Its text never reaches a session.
func (c *Channel) refuse(ctx context.Context, ch *chat, m *models.Message) error {
	var from int64
	if m.From != nil {
		from = m.From.ID
	}
	c.log.Warn("telegram: message from a chat that is not allowed; refused", "chat", m.Chat.ID, "user", from)
	first, err := c.updates.FirstRefusal(ctx, ChannelName, m.Chat.ID, time.Now().UTC().Format(time.DateOnly))
	if err != nil || !first {
		return err
	}
	return c.send(ctx, ch, fmt.Sprintf("Sorry, this Ava only answers the chats it was set up for. "+
		"If that should include you, ask its owner to add %d to AVA_TELEGRAM_ALLOWED.", m.Chat.ID))
}

// unsupported acknowledges a message that is not text.
func unsupported(m *models.Message) string {
	kind := "this kind of message"
	switch {
	case len(m.Photo) > 0:
		kind = "photos"
	case m.Document != nil:
		kind = "files"
	case m.Voice != nil:
		kind = "voice messages"
	}
	return "I can't read " + kind + " yet; please send text."
}

// command splits "/stop@AvaBot S-1" into ("stop", "S-1").
func command(text string) (name, args string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	first, rest, _ := strings.Cut(strings.TrimSpace(text[1:]), " ")
	name, _, _ = strings.Cut(first, "@")
	return strings.ToLower(name), strings.TrimSpace(rest), name != ""
}

// sessionKey is the chat's main session.
func sessionKey(chat int64) string { return "ava:telegram:" + strconv.FormatInt(chat, 10) }

// chatOfKey is the chat whose session key is key: ava:telegram:<chat>,
// or a fresh session /new started there (ava:telegram:<chat>:<suffix>).
func chatOfKey(key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, "ava:telegram:")
	if !ok {
		return 0, false
	}
	id, _, _ := strings.Cut(rest, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil
}

// reported sends a report turn's answer to the chat whose current
// session it ran in: Ava reported its background subagents' results by
// itself (on_complete), so no answer of the person's carries it. A chat
// that has moved to another session since gets nothing.
func (c *Channel) reported(ctx context.Context, e ava.TurnEnded) {
	id, ok := chatOfKey(e.Session)
	if !e.Report || !ok {
		return
	}
	if key, err := c.session(ctx, id); err != nil || key != e.Session {
		return
	}
	c.mu.Lock()
	ch := c.chats[id]
	c.mu.Unlock()
	if ch == nil {
		ch = &chat{id: id, limiter: c.newChatLimiter()}
	}
	text := finalText(ava.TurnResult{Status: e.Status, Text: e.Text, Error: e.Error}, "")
	if err := c.send(ctx, ch, text); err != nil {
		c.log.Error("send the report of the background results", "chat", id, "err", err)
	}
}
