package telegram

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
)

// converse hands a message to the chat's session and returns once the
// session has it (or has refused it): the answer streams in the
// background, after the chat's earlier answers, so that the person's
// next message reaches the session while this one is answered and, sent
// within the merge window, is answered with it (seed 003).
func (c *Channel) converse(ctx context.Context, ch *chat, m *models.Message) error {
	key, err := c.session(ctx, ch.id)
	if err != nil {
		return err
	}
	a := ch.link(key)
	// An answer of the chat still reading the session hands its reader
	// on; else (or when the session is idle: what the old reader left
	// unread is over) the answer reads from here, subscribed before the
	// turn starts so that none of its events is missed.
	if !a.inherit || c.rt.State(key) == ava.Idle {
		a.own, a.err = c.subscribe(ctx, key)
	}
	if a.err == nil {
		a.turn, a.err = c.rt.Send(ctx, key, m.Text, ava.SendOptions{Queue: true, Merge: true, User: userName(m)})
	}
	c.wg.Go(func() { c.answer(ctx, ch, a) })
	return nil
}

// answer is one message's answer in a chat.
type answer struct {
	key     string
	gen     uint64          // its place among the chat's answers
	prev    <-chan struct{} // closed when the chat's previous answer has finished
	done    chan struct{}   // closed when this one has
	inherit bool            // the previous reader of key hands its reader on
	own     *reader         // else the answer's own
	turn    *ava.Turn
	err     error // why the session did not take the message
}

// link numbers a new answer of the chat, after the previous one.
func (ch *chat) link(key string) *answer {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.gen++
	a := &answer{key: key, gen: ch.gen, prev: ch.tail, done: make(chan struct{}),
		inherit: ch.lastKey == key && ch.busyLocked()}
	ch.tail, ch.lastKey = a.done, key
	return a
}

// answer streams a's answer once the chat's previous answer has
// finished, so that answers never interleave. A turn merged into the
// next one (Turn.Merged) posts no answer: the next turn answers both
// messages, and the merged turn's partial message, if it showed one, is
// edited to say so.
func (c *Channel) answer(ctx context.Context, ch *chat, a *answer) {
	defer close(a.done)
	if a.prev != nil {
		select {
		case <-a.prev:
		case <-ctx.Done():
			if a.own != nil {
				a.own.close()
			}
			return
		}
	}
	r, err := c.takeOver(ctx, ch, a)
	if err == nil {
		err = a.err
	}
	if err != nil {
		if err := c.send(ctx, ch, "I couldn't take that message: "+err.Error()); err != nil && ctx.Err() == nil {
			c.log.Error("telegram: could not send a refusal", "chat", ch.id, "err", err)
		}
		c.handOn(ctx, ch, a.gen, r)
		return
	}
	s := &stream{c: c, ch: ch, every: c.cfg.EditInterval}
	text := s.follow(ctx, r, a.turn.Done())
	if err := s.finish(ctx, a.turn, text); err != nil && ctx.Err() == nil {
		c.log.Error("telegram: answering failed", "chat", ch.id, "session", a.key, "err", err)
	}
	c.handOn(ctx, ch, a.gen, r)
}

// mergedNote replaces the partial answer of a turn merged into the next.
const mergedNote = "(answered together with your next message)"

// finish puts the turn's outcome in place once it is done: the final
// text, or, for a turn merged into the next one, nothing but mergedNote
// on its partial message.
func (s *stream) finish(ctx context.Context, turn *ava.Turn, streamed string) error {
	res, err := turn.Wait(ctx)
	if err != nil && res.Status == "" {
		return err
	}
	if turn.Merged() {
		if s.msgID == 0 {
			return nil
		}
		return s.c.edit(ctx, s.ch, s.msgID, message{text: mergedNote})
	}
	return s.final(ctx, finalText(res, streamed))
}

// takeOver stops the chat's subagent watcher, if one runs, and returns
// the reader a's answer reads with: its own, or the one the previous
// reader of its session handed on (where that one stopped, so that no
// event is missed or shown twice).
func (c *Channel) takeOver(ctx context.Context, ch *chat, a *answer) (*reader, error) {
	ch.stopWatching()
	ch.mu.Lock()
	r := ch.handed
	ch.handed = nil
	ch.mu.Unlock()
	if r != nil && (a.own != nil || r.key != a.key) {
		r.close()
		r = nil
	}
	switch {
	case a.own != nil:
		return a.own, nil
	case r == nil: // the previous answer stopped early (shutdown)
		return c.subscribe(ctx, a.key)
	}
	return r, nil
}

// handOn passes r, where the answer gen stopped reading its session, to
// the next reader: the chat's next answer when there is one, else a
// watcher of the subagents still running; else it is closed.
func (c *Channel) handOn(ctx context.Context, ch *chat, gen uint64, r *reader) {
	if r == nil {
		return
	}
	ch.mu.Lock()
	newest := ch.leaveLocked(gen, r)
	ch.mu.Unlock()
	switch {
	case !newest:
	case ctx.Err() == nil && (c.rt.State(r.key) == ava.WaitingForSubagents || c.unread(ctx, r)):
		// Subagents still run, or they ended after the turn did and
		// their notices wait to be shown (the watcher stops at idle).
		c.startWatching(ctx, ch, gen, r)
	default:
		r.close()
	}
}

// unread reports whether r has events it has not handled yet.
func (c *Channel) unread(ctx context.Context, r *reader) bool {
	if len(r.rest) > 0 {
		return true
	}
	last, err := c.rt.LastSeq(ctx, r.key)
	return err == nil && last > r.seq
}

// leaveLocked hands r on to the chat's next answer when one newer than
// gen exists; it reports whether gen is the newest, leaving r to the
// caller (caller holds ch.mu).
func (ch *chat) leaveLocked(gen uint64, r *reader) bool {
	if ch.gen == gen {
		return true
	}
	if ch.handed != nil {
		ch.handed.close()
	}
	ch.handed = r
	return false
}

// reader reads a session's events for a chat, passed from one answer to
// the next and to the subagent watcher: each reads on where the one
// before stopped.
type reader struct {
	key  string
	sub  *ava.Subscription // a Follow subscription: it outlives idle periods
	seq  uint64            // the last event number handled
	rest []event.Event     // read but not yet handled
}

// subscribe returns a reader of key's events from its last one on.
func (c *Channel) subscribe(ctx context.Context, key string) (*reader, error) {
	last, err := c.rt.LastSeq(ctx, key)
	if err != nil {
		return nil, err
	}
	return &reader{key: key, sub: c.rt.Follow(key, last), seq: last}, nil
}

func (r *reader) close() { r.sub.Close() }

// feed delivers r's events in batches (what the previous reader left
// first) from a goroutine, so that the caller can also wait on timers.
// stop ends the reading and keeps in r, to be read next, left (the part
// of the last batch the caller did not handle) and what was read but
// not delivered.
func (r *reader) feed(ctx context.Context) (evs <-chan []event.Event, stop func(left []event.Event)) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan []event.Event)
	first := r.rest
	r.rest = nil
	go func() {
		defer close(ch)
		if len(first) > 0 {
			ch <- first // stop takes it if the caller does not
		}
		for {
			batch, err := r.sub.Next(ctx)
			if err != nil {
				return
			}
			ch <- batch
		}
	}()
	return ch, func(left []event.Event) {
		cancel()
		rest := slices.Clone(left)
		for batch := range ch {
			rest = append(rest, batch...)
		}
		r.rest = rest
	}
}

// finalText is what the person reads when the turn ends: the answer, or
// how the turn ended when it has none.
func finalText(res ava.TurnResult, streamed string) string {
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
	shown  message
	lastAt time.Time
}

// follow reads the session's events until the turn is done and its
// events are read (its SessionEnd, or every event numbered when it was
// done, for a turn without one): text deltas edit the answer's message
// (paced), tool and subagent events become status lines, and typing
// shows throughout. It returns the text streamed.
func (s *stream) follow(ctx context.Context, r *reader, done <-chan struct{}) string {
	var text strings.Builder
	evs, stop := r.feed(ctx)
	var left []event.Event
	defer func() { stop(left) }()
	typing := time.NewTicker(s.c.cfg.TypingInterval)
	defer typing.Stop()
	s.c.typing(ctx, s.ch)
	var end uint64 // once the turn is done: the last event number it can have
	for {
		select {
		case batch, ok := <-evs:
			if !ok {
				return text.String()
			}
			for i, ev := range batch {
				s.event(ctx, ev, &text)
				r.seq = max(r.seq, ev.Seq)
				if ev.Type == event.SessionEnd && ev.Agent == event.OrchestratorID || end > 0 && r.seq >= end {
					left = batch[i+1:]
					return text.String()
				}
			}
		case <-typing.C:
			s.c.typing(ctx, s.ch)
		case <-done:
			done = nil
			last, err := s.c.rt.LastSeq(ctx, r.key)
			if err != nil || last <= r.seq {
				return text.String()
			}
			end = last
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
		s.c.statusEvent(ctx, s.ch, ev)
	case event.QuestionAnswered:
		if line := terminal.SubagentEventLine(ev); line != "" {
			_ = s.c.send(ctx, s.ch, line)
		}
	case event.UserQuestion:
		if line := terminal.SubagentEventLine(ev); line != "" {
			_ = s.c.send(ctx, s.ch, line+"\nAnswer with /answer your answer.")
		}
	case event.SpawnProposed:
		s.c.propose(ctx, s.ch, ev)
	}
}

// maybeEdit shows the answer so far, at most once per interval, its
// Markdown rendered as far as it has streamed.
func (s *stream) maybeEdit(ctx context.Context, text string) {
	if strings.TrimSpace(text) == "" || time.Since(s.lastAt) < s.every {
		return
	}
	first := answerParts(text)[0]
	if first.same(s.shown) {
		return
	}
	s.lastAt = time.Now()
	if s.msgID == 0 {
		id, err := s.c.sendParts(ctx, s.ch, []message{first}, nil)
		if err == nil {
			s.msgID, s.shown = id, first
		}
		return
	}
	if s.c.edit(ctx, s.ch, s.msgID, first) == nil {
		s.shown = first
	}
}

// final puts the final answer in place, its Markdown as entities: the
// streamed message edited to its first part, the rest sent after it.
func (s *stream) final(ctx context.Context, text string) error {
	parts := answerParts(text)
	if s.msgID == 0 {
		_, err := s.c.sendParts(ctx, s.ch, parts, nil)
		return err
	}
	if !parts[0].same(s.shown) {
		if err := s.c.edit(ctx, s.ch, s.msgID, parts[0]); err != nil {
			return err
		}
	}
	if len(parts) > 1 {
		_, err := s.c.sendParts(ctx, s.ch, parts[1:], nil)
		return err
	}
	return nil
}

// startWatching reads on with r in the background while subagents the
// session's turn started still run: the typing action stays alive and
// each completion is reported as it comes, until the session is idle or
// the chat's next answer takes over (takeOver); gen is the answer that
// started it.
func (c *Channel) startWatching(ctx context.Context, ch *chat, gen uint64, r *reader) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	ch.mu.Lock()
	ch.watchCancel, ch.watchDone = cancel, done
	ch.mu.Unlock()
	c.wg.Go(func() {
		defer close(done)
		defer cancel()
		c.watch(wctx, ch, r)
		ch.mu.Lock()
		ch.watchCancel, ch.watchDone = nil, nil
		newest := ch.leaveLocked(gen, r)
		ch.mu.Unlock()
		if newest {
			r.close()
		}
	})
}

// stopWatching ends the chat's watcher, if one runs, and waits for it.
func (ch *chat) stopWatching() {
	ch.mu.Lock()
	cancel, done := ch.watchCancel, ch.watchDone
	ch.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// watch is the watcher's loop.
func (c *Channel) watch(ctx context.Context, ch *chat, r *reader) {
	s := &stream{c: c, ch: ch, every: c.cfg.EditInterval}
	evs, stop := r.feed(ctx)
	var left []event.Event
	defer func() { stop(left) }()
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
			for i, ev := range batch {
				if ctx.Err() != nil {
					left = batch[i:] // the next reader's
					return
				}
				switch ev.Type {
				case event.SubagentComplete, event.SubagentSpawn, event.SubagentProgress, event.SpawnProposed,
					event.UserQuestion, event.QuestionAnswered:
					s.event(ctx, ev, &discard)
				}
				r.seq = max(r.seq, ev.Seq)
				if idle(ev) {
					left = batch[i+1:]
					return
				}
			}
		case <-typing.C:
			if c.rt.State(r.key) == ava.Idle {
				// Idle: read on to the idle event, so that the last
				// notices (a completion just before it) are shown.
				if !c.unread(ctx, r) {
					return
				}
				continue
			}
			c.typing(ctx, ch)
		case <-ctx.Done():
			return
		}
	}
}

// idle reports whether ev says the session became idle.
func idle(ev event.Event) bool {
	var st event.StateContent
	return ev.Type == event.SessionState && ev.Decode(&st) == nil && st.State == string(ava.Idle)
}

// session is the chat's current session key.
func (c *Channel) session(ctx context.Context, chat int64) (string, error) {
	key, err := c.updates.ChatSession(ctx, ChannelName, chat)
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
