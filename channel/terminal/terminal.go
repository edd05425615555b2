// Package terminal renders a session's events for a terminal: the
// answer as it streams, tool and subagent activity as status lines.
package terminal

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/avaagent/ava/event"
)

// PrintTurn streams the session's answer to stdout (unless quiet) and its
// tool and subagent activity to stderr, until ctx is done or the
// session's stream closes, or until the caller, once the turn (and what
// it waits for) is over, sends on until the sequence number of the
// session's last event: PrintTurn then prints every event up to it and
// returns. A closed until stops it at once.
//
// On a terminal (Styled, with the process's environment) the answer's
// Markdown is rendered (Markdown) a block at a time: each block is
// printed once the blank line after it has streamed, the rest when the
// answer ends. Elsewhere the answer is printed as it streams, as written.
func PrintTurn(ctx context.Context, sub *event.Subscription, until <-chan uint64, stdout, stderr io.Writer, quiet bool) {
	p := &turnPrinter{stdout: stdout, stderr: stderr, quiet: quiet, endsWithNewline: true,
		styled: !quiet && Styled(stdout, os.Getenv)}
	defer p.close()
	waiting, stopWaiting := context.WithCancel(ctx)
	var end atomic.Int64 // the last event to print; -1 until known
	end.Store(-1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopWaiting()
	wg.Go(func() {
		select {
		case last, ok := <-until:
			if ok {
				end.Store(int64(last))
			} else {
				end.Store(0)
			}
			stopWaiting()
		case <-waiting.Done():
		}
	})
	for {
		readCtx := waiting
		if e := end.Load(); e >= 0 {
			if sub.Cursor() >= uint64(e) {
				return
			}
			readCtx = ctx // the rest is stored: read on to it
		}
		evs, err := sub.Next(readCtx)
		if err != nil {
			if ctx.Err() == nil && end.Load() >= 0 {
				continue // until came while waiting
			}
			return
		}
		p.print(evs)
	}
}

// turnPrinter is PrintTurn's state: what it wrote to stdout.
type turnPrinter struct {
	stdout, stderr             io.Writer
	quiet                      bool
	wroteText, endsWithNewline bool
	// styled renders the answer's Markdown; held is the streamed text
	// not yet printed (the block still streaming).
	styled bool
	held   strings.Builder
}

// text prints streamed answer text: as it is, or, styled, the blocks it
// completes.
func (p *turnPrinter) text(s string) {
	p.wroteText = true
	if !p.styled {
		io.WriteString(p.stdout, Printable(s))
		p.endsWithNewline = strings.HasSuffix(s, "\n")
		return
	}
	p.held.WriteString(s)
	held := p.held.String()
	if end := blockEnd(held); end > 0 {
		p.render(held[:end])
		p.held.Reset()
		p.held.WriteString(held[end:])
	}
}

// flush prints the held text, styled.
func (p *turnPrinter) flush() {
	if p.held.Len() > 0 {
		p.render(p.held.String())
		p.held.Reset()
	}
}

// render prints complete Markdown blocks, styled, ending with a blank
// line when more may follow.
func (p *turnPrinter) render(blocks string) {
	if strings.TrimSpace(blocks) == "" {
		return
	}
	io.WriteString(p.stdout, Markdown(blocks)+"\n")
	if blockEnd(blocks) == len(blocks) {
		io.WriteString(p.stdout, "\n")
	}
	p.endsWithNewline = true
}

// close ends the answer's last line.
func (p *turnPrinter) close() {
	if p.styled {
		p.flush()
	}
	if p.wroteText && !p.endsWithNewline && !p.quiet {
		io.WriteString(p.stdout, "\n")
	}
}

// print writes one batch of the session's events.
func (p *turnPrinter) print(evs []event.Event) {
	if p.quiet {
		return
	}
	stdout, stderr := p.stdout, p.stderr
	for _, ev := range evs {
		switch ev.Type {
		case event.TextDelta:
			var c event.TextContent
			if ev.Decode(&c) == nil && c.Text != "" {
				p.text(c.Text)
			}
		case event.Retry:
			var c event.RetryContent
			_ = ev.Decode(&c)
			p.held.Reset() // the streamed text not yet printed is void
			fmt.Fprintf(stderr, "\n[retrying model call, attempt %d: %s]\n", c.Attempt, c.Error)
		case event.ToolCall:
			var c event.ToolCallContent
			_ = ev.Decode(&c)
			fmt.Fprintf(stderr, "[tool] %s %s\n", c.Name, shorten(string(c.Args), 120))
		case event.SubagentSpawn, event.SubagentComplete, event.SubagentProgress:
			if line := SubagentEventLine(ev); line != "" {
				fmt.Fprintln(stderr, line)
			}
		case event.SpawnProposed:
			var c event.SpawnProposedContent
			_ = ev.Decode(&c)
			fmt.Fprintf(stderr, "[proposal %s awaits your confirmation]\n%s\n", c.PendingID, c.Text)
		case event.AssistantMessage:
			var c event.TextContent
			if !p.wroteText && ev.Decode(&c) == nil && c.Text != "" {
				// An answer to a proposal is not streamed.
				p.text(c.Text)
			}
			if p.styled {
				p.flush()
			}
			if p.wroteText && !p.endsWithNewline {
				io.WriteString(stdout, "\n")
				p.endsWithNewline = true
			}
		}
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// FollowSubagent prints a subagent's tool calls, stalls and retries to w
// as status lines, until ctx is done or its stream closes.
func FollowSubagent(ctx context.Context, sub *event.Subscription, role string, w io.Writer) {
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			return
		}
		for _, ev := range evs {
			if ev.Type != event.ToolCall && ev.Type != event.Stalled && ev.Type != event.Retry {
				continue
			}
			if line := EventLine(role, ev); line != "" {
				fmt.Fprintln(w, line)
			} else if ev.Type == event.Retry {
				fmt.Fprintln(w, "[retrying a model call]")
			}
		}
	}
}
