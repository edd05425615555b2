package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/session"
)

// converse hands a message to the chat's session and streams the answer
// back by editing one message, then sends the final text; subagent
// activity becomes status lines; typing shows while the session works.
func (c *Channel) converse(ctx context.Context, ch *chat, m *models.Message) error {
	key, err := c.session(ctx, ch.id)
	if err != nil {
		return err
	}
	// A watcher of the last turn's subagents hands over where it stopped
	// reading, so no completion is missed or shown twice.
	last, watched := ch.stopWatching()
	if !watched {
		if last, err = c.cfg.Sessions.LastSeq(key); err != nil {
			return fmt.Errorf("session %s: %w", key, err)
		}
	}
	sub := c.cfg.Sessions.Subscribe(key, last)
	turn, err := c.cfg.Sessions.Send(ctx, key, m.Text, session.SendOptions{Queue: true, Merge: true, User: userName(m)})
	if err != nil {
		sub.Close()
		return c.send(ctx, ch, "I couldn't take that message: "+err.Error())
	}
	s := &stream{c: c, ch: ch, every: c.cfg.EditInterval}
	text := s.follow(ctx, sub, turn.Done())
	res, err := turn.Wait(ctx)
	if err != nil && res.Status == "" {
		sub.Close()
		return err
	}
	if err := s.final(ctx, finalText(res, text)); err != nil {
		sub.Close()
		return err
	}
	c.startWatching(ctx, ch, key, sub)
	return nil
}

// finalText is what the person reads when the turn ends: the answer, or
// how the turn ended when it has none.
func finalText(res session.Result, streamed string) string {
	text := res.Text
	if strings.TrimSpace(text) == "" {
		text = streamed
	}
	if res.Status != "" && res.Status != "success" {
		note := fmt.Sprintf("(the request ended: %s", res.Status)
		if res.Error != "" {
			note += ": " + res.Error
		}
		note += ")"
		if strings.TrimSpace(text) == "" {
			return note
		}
		return text + "\n\n" + note
	}
	if strings.TrimSpace(text) == "" {
		return "(no answer)"
	}
	return text
}

// stream is one answer being streamed into a chat.
type stream struct {
	c      *Channel
	ch     *chat
	every  time.Duration
	msgID  int
	shown  string
	lastAt time.Time
}

// follow reads the session's events until the turn is done and its
// events are read: text deltas edit the answer's message (paced), tool
// and subagent events become status lines, and typing shows throughout.
// It returns the text streamed.
func (s *stream) follow(ctx context.Context, sub *event.Subscription, done <-chan struct{}) string {
	var text strings.Builder
	evs, stop := batches(ctx, sub)
	defer stop()
	typing := time.NewTicker(s.c.cfg.TypingInterval)
	defer typing.Stop()
	s.c.typing(ctx, s.ch)
	for {
		select {
		case batch, ok := <-evs:
			if !ok {
				return text.String()
			}
			for _, ev := range batch {
				s.event(ctx, ev, &text)
				if ev.Type == event.SessionEnd && ev.Agent == event.OrchestratorID {
					return text.String()
				}
			}
		case <-typing.C:
			s.c.typing(ctx, s.ch)
		case <-done:
			done = nil // read on to the turn's SessionEnd
		case <-ctx.Done():
			return text.String()
		}
	}
}

// event applies one session event to the streamed answer.
func (s *stream) event(ctx context.Context, ev event.Event, text *strings.Builder) {
	switch ev.Type {
	case event.TextDelta:
		var c event.TextContent
		if ev.Decode(&c) == nil {
			text.WriteString(c.Text)
			s.maybeEdit(ctx, text.String())
		}
	case event.Retry:
		text.Reset() // what streamed since the last turn boundary is void
	case event.SubagentSpawn, event.SubagentComplete, event.SubagentProgress:
		if line := terminal.SubagentEventLine(ev); line != "" {
			_ = s.c.send(ctx, s.ch, line)
		}
	case event.SpawnProposed:
		s.c.propose(ctx, s.ch, ev)
	}
}

// maybeEdit shows the answer so far, at most once per interval.
func (s *stream) maybeEdit(ctx context.Context, text string) {
	if strings.TrimSpace(text) == "" || text == s.shown || time.Since(s.lastAt) < s.every {
		return
	}
	s.lastAt = time.Now()
	if s.msgID == 0 {
		id, err := s.c.sendParts(ctx, s.ch, Split(text, MaxMessage)[0], nil)
		if err == nil {
			s.msgID, s.shown = id, text
		}
		return
	}
	if s.c.edit(ctx, s.ch, s.msgID, text) == nil {
		s.shown = text
	}
}

// final puts the final text in place: the streamed message edited to its
// first part, the rest sent after it.
func (s *stream) final(ctx context.Context, text string) error {
	parts := Split(text, MaxMessage)
	if s.msgID == 0 {
		return s.c.send(ctx, s.ch, text)
	}
	if parts[0] != s.shown {
		if err := s.c.edit(ctx, s.ch, s.msgID, parts[0]); err != nil {
			return err
		}
	}
	for _, p := range parts[1:] {
		if err := s.c.send(ctx, s.ch, p); err != nil {
			return err
		}
	}
	return nil
}

// startWatching follows the session in the background while subagents
// the turn started still run (the chat's worker goes on to the next
// message): the typing action stays alive and each completion is
// reported as it comes, until the session is idle or the next message
// takes over. It owns sub.
func (c *Channel) startWatching(ctx context.Context, ch *chat, key string, sub *event.Subscription) {
	if c.cfg.Sessions.State(key) != session.WaitingForSubagents {
		sub.Close()
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	ch.mu.Lock()
	ch.watchCancel, ch.watchDone, ch.cursor = cancel, done, sub.Cursor()
	ch.mu.Unlock()
	c.wg.Go(func() {
		defer close(done)
		defer sub.Close()
		c.watch(wctx, ch, key, sub)
	})
}

// stopWatching ends the chat's watcher, if one runs, and returns the
// last sequence number it read.
func (ch *chat) stopWatching() (uint64, bool) {
	ch.mu.Lock()
	cancel, done := ch.watchCancel, ch.watchDone
	ch.watchCancel, ch.watchDone = nil, nil
	ch.mu.Unlock()
	if cancel == nil {
		return 0, false
	}
	cancel()
	<-done
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.cursor, true
}

// watch is the watcher's loop.
func (c *Channel) watch(ctx context.Context, ch *chat, key string, sub *event.Subscription) {
	s := &stream{c: c, ch: ch, every: c.cfg.EditInterval}
	evs, stop := batches(ctx, sub)
	defer stop()
	typing := time.NewTicker(c.cfg.TypingInterval)
	defer typing.Stop()
	c.typing(ctx, ch)
	var discard strings.Builder
	for {
		select {
		case batch, ok := <-evs:
			if !ok {
				return
			}
			for _, ev := range batch {
				switch ev.Type {
				case event.SubagentComplete, event.SubagentSpawn, event.SubagentProgress, event.SpawnProposed:
					s.event(ctx, ev, &discard)
				}
				ch.mu.Lock()
				ch.cursor = max(ch.cursor, ev.Seq)
				ch.mu.Unlock()
				if idle(ev) {
					return
				}
			}
		case <-typing.C:
			if c.cfg.Sessions.State(key) == session.Idle {
				return
			}
			c.typing(ctx, ch)
		case <-ctx.Done():
			return
		}
	}
}

// batches reads sub in a goroutine, so that its reader can also wait on
// timers; stop ends the reading and returns once the goroutine has, so
// the caller may use sub again (a batch read but not taken is dropped).
func batches(ctx context.Context, sub *event.Subscription) (<-chan []event.Event, func()) {
	ctx, cancel := context.WithCancel(ctx)
	evs := make(chan []event.Event)
	go func() {
		defer close(evs)
		for {
			batch, err := sub.Next(ctx)
			if err != nil {
				return
			}
			select {
			case evs <- batch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return evs, func() {
		cancel()
		for range evs {
		}
	}
}

// idle reports whether ev says the session became idle.
func idle(ev event.Event) bool {
	var st event.StateContent
	return ev.Type == event.SessionState && ev.Decode(&st) == nil && st.State == string(session.Idle)
}

// session is the chat's current session key.
func (c *Channel) session(ctx context.Context, chat int64) (string, error) {
	key, err := c.cfg.Store.ChatSession(ctx, ChannelName, chat)
	if err != nil {
		return "", err
	}
	if key == "" {
		key = sessionKey(chat)
	}
	return key, nil
}

// userName is the sender's name for the record.
func userName(m *models.Message) string {
	if m.From == nil {
		return ""
	}
	if m.From.Username != "" {
		return m.From.Username
	}
	return fmt.Sprint(m.From.ID)
}

// errNotHere is returned for a subagent that is not this chat's.
var errNotHere = errors.New("no such subagent in this chat")
