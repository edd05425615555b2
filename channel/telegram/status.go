package telegram

import (
	"context"
	"sync"
	"time"

	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
)

// maxSummary bounds, in UTF-16 units, the summary a completion line
// carries; /result sends the whole result.
const maxSummary = 1500

// statusLines keeps one Telegram message per subagent run: its status
// line (🔍 starting, ⏳ still working, ✅ complete) is posted once and
// then edited in place as the run progresses, at most once per
// Config.StatusInterval per message (Telegram limits edits); a state
// that arrives sooner waits and is written when the interval has passed,
// replaced by any newer one meanwhile, so the last state is always
// written. A run's line is forgotten once its final state is shown: a
// follow-up run of the same subagent posts a line of its own.
type statusLines struct {
	mu    sync.Mutex
	lines map[string]*statusLine // by subagent ID
}

// statusLine is one subagent run's message. Its mutex is held across the
// Bot API calls that write it, so that its writes never overtake each
// other.
type statusLine struct {
	mu        sync.Mutex
	id        string // the subagent's
	msgID     int    // 0 until posted
	shown     message
	want      message
	final     bool      // want is the run's last state
	at        time.Time // when the message was last written
	scheduled bool      // a delayed write is pending
}

// line returns the status line of subagent id, a new one when it has
// none (or only a finished run's, which a spawn replaces).
func (s *statusLines) line(id string, spawn bool) *statusLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lines == nil {
		s.lines = map[string]*statusLine{}
	}
	l := s.lines[id]
	if l == nil || spawn && l.finalShown() {
		l = &statusLine{id: id}
		s.lines[id] = l
	}
	return l
}

// forget drops l once its final state is written.
func (s *statusLines) forget(l *statusLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lines[l.id] == l {
		delete(s.lines, l.id)
	}
}

// finalShown reports whether l's last state is on screen.
func (l *statusLine) finalShown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.final && l.msgID != 0 && l.want.same(l.shown)
}

// statusEvent shows a subagent's spawn, progress or completion event on
// the run's status line; it reports false for an event that has no line.
func (c *Channel) statusEvent(ctx context.Context, ch *chat, ev event.Event) bool {
	var ids struct {
		SubagentID string `json:"subagentId"`
	}
	text := terminal.SubagentEventLine(ev)
	if text == "" || ev.Decode(&ids) != nil || ids.SubagentID == "" {
		return false
	}
	final := ev.Type == event.SubagentComplete
	if final {
		text = completionText(ev, text, ids.SubagentID)
	}
	l := c.lines.line(ids.SubagentID, ev.Type == event.SubagentSpawn)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.want, l.final = plainParts(text)[0], final
	c.writeLocked(ctx, ch, l)
	return true
}

// completionText is a run's last status line: the line, the summary
// (cut to maxSummary), the sources it cites, and the command that sends
// the whole result; cut to one message.
func completionText(ev event.Event, line, id string) string {
	var done event.SubagentCompleteContent
	_ = ev.Decode(&done)
	text := line
	if summary := terminal.Printable(done.Summary); summary != "" {
		if units(summary) > maxSummary {
			summary = summary[:fit(summary, maxSummary-1)] + "…"
		}
		text += "\n" + summary
	}
	if sources := terminal.SourcesText(ev); sources != "" {
		text += "\n" + sources
	}
	more := "\nThe whole result: /result " + id
	if units(text)+units(more) > MaxMessage {
		text = text[:fit(text, MaxMessage-units(more)-1)] + "…"
	}
	return text + more
}

// writeLocked writes l's wanted state: posts it the first time, edits it
// when the interval since the last write has passed, else leaves a
// delayed write to do it (caller holds l.mu).
func (c *Channel) writeLocked(ctx context.Context, ch *chat, l *statusLine) {
	switch {
	case l.msgID == 0:
		id, err := c.sendParts(ctx, ch, []message{l.want}, nil)
		if err != nil {
			c.log.Warn("telegram: could not post a status line", "chat", ch.id, "subagent", l.id, "err", err)
			return
		}
		l.msgID, l.shown, l.at = id, l.want, time.Now()
	case l.want.same(l.shown):
	case time.Since(l.at) >= c.cfg.StatusInterval:
		if err := c.edit(ctx, ch, l.msgID, l.want); err != nil {
			c.log.Warn("telegram: could not edit a status line", "chat", ch.id, "subagent", l.id, "err", err)
			return
		}
		l.shown, l.at = l.want, time.Now()
	case !l.scheduled:
		l.scheduled = true
		pause := c.cfg.StatusInterval - time.Since(l.at)
		// Run's context, not the reader's: a watcher that the chat's
		// next answer stops must not take the last state with it.
		life := c.lifetime(ctx)
		c.wg.Go(func() { c.writeLater(life, ch, l, pause) })
		return
	default:
		return // the scheduled write takes the newest state
	}
	if l.final && l.want.same(l.shown) {
		c.lines.forget(l)
	}
}

// writeLater writes l's newest state after pause (unless ctx ends first).
func (c *Channel) writeLater(ctx context.Context, ch *chat, l *statusLine, pause time.Duration) {
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scheduled = false
	c.writeLocked(ctx, ch, l)
}

// lifetime is Run's context (the channel's life), or ctx before Run.
func (c *Channel) lifetime(ctx context.Context) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runCtx != nil {
		return c.runCtx
	}
	return ctx
}
