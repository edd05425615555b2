package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/transcript"
)

// DefaultHistoryLimit is how many stored messages a turn's prompt holds.
const DefaultHistoryLimit = 200

// digestBudget bounds the text of a results digest (about 12k tokens):
// each result gets an equal share for its task and summary (whole, or
// cut by size with a marker), its ID and status always.
const digestBudget = 48_000

// StoreHistory keeps sessions' conversations in the store. Subagent
// results announced into the session ([Subagent] messages) are part of it,
// so they reach the orchestrator's next prompt, once, without having
// started a turn themselves.
//
// Every result that arrived since the orchestrator's last answer reaches
// its next prompt: when more arrived than the window holds, the ones
// before the window are given as one digest message naming each subagent
// with its status and summary (the full result is a subagent_status call
// away), so none is dropped and none is given twice.
type StoreHistory struct {
	Store store.SessionStore
	// Limit caps the messages loaded (0: DefaultHistoryLimit).
	Limit int
}

// Load implements History. A window that would start inside a tool
// exchange is trimmed to a clean start.
func (h StoreHistory) Load(ctx context.Context, session string) ([]llm.Message, error) {
	limit := h.Limit
	if limit == 0 {
		limit = DefaultHistoryLimit
	}
	stored, err := h.Store.Messages(ctx, session, limit)
	if err != nil {
		return nil, err
	}
	before, err := h.unseenBefore(ctx, session, stored, limit)
	if err != nil {
		return nil, err
	}
	out, err := transcript.FromStore(stored)
	if err != nil {
		return nil, err
	}
	out = cleanStart(out)
	if len(before) == 0 {
		return out, nil
	}
	lead, err := overflowMessages(before)
	if err != nil {
		return nil, err
	}
	if n := len(lead); n > 0 && len(out) > 0 && lead[n-1].Role == out[0].Role {
		// Roles alternate, as transcript.FromStore keeps them.
		lead[n-1].Content = append(lead[n-1].Content, out[0].Content...)
		out = out[1:]
	}
	return append(lead, out...), nil
}

// unseenBefore returns the messages stored before window (the last limit
// messages) that the orchestrator has not answered yet: those after its
// last stored answer. There are none when the window holds an answer of
// the orchestrator or the whole history.
func (h StoreHistory) unseenBefore(ctx context.Context, session string, window []store.Message, limit int) ([]store.Message, error) {
	if len(window) < limit || hasAnswer(window) {
		return nil, nil
	}
	for n := 2 * limit; ; n *= 2 {
		all, err := h.Store.Messages(ctx, session, n)
		if err != nil {
			return nil, fmt.Errorf("load the results before the window of %s: %w", session, err)
		}
		if len(all) == len(window) {
			return nil, nil
		}
		// all ends with the window, unless messages were added since:
		// take what precedes the window's first message.
		first := window[0].ID
		var before []store.Message
		for _, m := range all {
			if m.ID >= first {
				break
			}
			before = append(before, m)
		}
		if i := lastAnswer(before); i >= 0 || len(all) < n {
			return before[i+1:], nil
		}
	}
}

// hasAnswer reports whether msgs hold a message of the orchestrator.
func hasAnswer(msgs []store.Message) bool { return lastAnswer(msgs) >= 0 }

// lastAnswer is the index of the last orchestrator message in msgs, -1
// if none.
func lastAnswer(msgs []store.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == store.RoleAssistant {
			return i
		}
	}
	return -1
}

// overflowMessages is what of msgs (unanswered, before the window) the
// prompt carries: one digest of the [Subagent] results, then the other
// messages (the person's) whole.
func overflowMessages(msgs []store.Message) ([]llm.Message, error) {
	var results, others []store.Message
	for _, m := range msgs {
		if m.Role == store.RoleSubagent {
			results = append(results, m)
		} else {
			others = append(others, m)
		}
	}
	var out []llm.Message
	if len(results) > 0 {
		out = append(out, llm.UserText(ResultsDigest(results)))
	}
	rest, err := transcript.FromStore(others)
	if err != nil {
		return nil, err
	}
	return append(out, cleanStart(rest)...), nil
}

// ResultsDigest is the [Subagent] message that stands for results that
// do not fit in the prompt's window: each subagent's ID and status on a
// line of its own, then its task and summary (or error) whole, quoted
// under it (tool.Quote: a summary that quotes a tool's output keeps its
// lines, and none of them reads as another result's line), oldest first,
// as untrusted data. Each result gets an equal share of digestBudget; one
// longer than its share is cut there with a marker naming subagent_status,
// which gives it whole.
func ResultsDigest(results []store.Message) string {
	share := max(digestBudget/max(len(results), 1)-40, 0)
	var b strings.Builder
	for _, m := range results {
		a := ParseAnnouncement(m.Text)
		fmt.Fprintf(&b, "- %s status=%s\n", a.ID, a.Status)
		if detail := digestDetail(a, share); detail != "" {
			b.WriteString(detail + "\n")
		}
	}
	head := fmt.Sprintf("%d more subagent results arrived since your last answer than this conversation's window holds. "+
		"Each one is listed here once, oldest first, with its status, then its task and summary quoted under it; "+
		"read a full result with subagent_status and its ID.", len(results))
	return "[Subagent] " + head + "\n" + tool.Untrusted("subagent results digest", b.String())
}

// digestDetail is a result's task and summary (or error), quoted, in at
// most n bytes: cut by size, on a character boundary, with a marker line
// of Ava's (unquoted, so the text cannot forge one) when longer; "" when
// there is nothing to say or no room.
func digestDetail(a Announcement, n int) string {
	var parts []string
	if a.Task != "" {
		parts = append(parts, "task: "+a.Task)
	}
	switch {
	case a.Summary != "":
		parts = append(parts, "summary: "+a.Summary)
	case a.Error != "":
		parts = append(parts, "error: "+a.Error)
	}
	if len(parts) == 0 || n <= 0 {
		return ""
	}
	s := tool.Quote(strings.Join(parts, "\n"))
	if len(s) <= n {
		return s
	}
	marker := fmt.Sprintf("[… cut: its %d bytes exceed this digest's share of %d; subagent_status %s gives the whole result]", len(s), n, a.ID)
	keep := n - len(marker) - 1
	if keep < len(tool.QuotePrefix)+1 {
		return marker
	}
	return strings.ToValidUTF8(s[:keep], "") + "\n" + marker
}

// Announcement is what a [Subagent] message says (subagent's
// announcement format: "[Task: …]", "Subagent S-… finished: status=…, …",
// "Summary: …", "Error: …", the lines of a summary or an error after its
// first quoted by tool.Quote).
type Announcement struct {
	ID, Status, Task, Summary, Error string
}

// ParseAnnouncement reads a [Subagent] message's text; fields it does not
// find stay empty ("?" for the ID and status). A summary or error is
// read whole: its first line and the quoted lines that follow it (an
// announcement stored before they were quoted gives its first line).
func ParseAnnouncement(text string) Announcement {
	a := Announcement{ID: "?", Status: "?"}
	var field *string // the field whose quoted lines may follow
	for line := range strings.SplitSeq(text, "\n") {
		if field != nil {
			if rest, ok := unquoteLine(line); ok {
				*field += "\n" + rest
				continue
			}
			field = nil
		}
		switch {
		case strings.HasPrefix(line, "[Task: ") && a.Task == "":
			a.Task = strings.TrimSuffix(strings.TrimPrefix(line, "[Task: "), "]")
		case strings.HasPrefix(line, "Subagent ") && a.ID == "?":
			f := strings.Fields(line)
			if len(f) > 1 {
				a.ID = f[1]
			}
			if _, st, ok := strings.Cut(line, "status="); ok {
				a.Status, _, _ = strings.Cut(st, ",")
			}
		case strings.HasPrefix(line, "Summary: ") && a.Summary == "":
			a.Summary, field = strings.TrimPrefix(line, "Summary: "), &a.Summary
		case strings.HasPrefix(line, "Error: ") && a.Error == "":
			a.Error, field = strings.TrimPrefix(line, "Error: "), &a.Error
		}
	}
	return a
}

// unquoteLine is a line tool.Quote quoted, without its prefix (a quoted
// empty line whose trailing space was lost counts too).
func unquoteLine(line string) (string, bool) {
	if rest, ok := strings.CutPrefix(line, tool.QuotePrefix); ok {
		return rest, true
	}
	return "", line == strings.TrimSpace(tool.QuotePrefix)
}

// cleanStart drops leading messages until a user message that holds no
// tool results, so a truncated window never opens mid tool exchange.
func cleanStart(msgs []llm.Message) []llm.Message {
	for i, m := range msgs {
		if m.Role != llm.RoleUser {
			continue
		}
		clean := true
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				clean = false
			}
		}
		if clean {
			return msgs[i:]
		}
	}
	return nil
}

// Save implements History: a turn's messages are stored together, in
// one transaction, so nothing lands between a tool call and its result.
func (h StoreHistory) Save(ctx context.Context, session string, msgs []llm.Message) error {
	return h.SaveKeyed(ctx, session, msgs, nil)
}

// SaveKeyed implements History: the key, when set, goes with the first
// message (the person's), in the same transaction.
func (h StoreHistory) SaveKeyed(ctx context.Context, session string, msgs []llm.Message, key *store.Idempotency) error {
	out, err := transcript.ToStore(session, store.SenderAva, msgs)
	if err != nil {
		return err
	}
	if key != nil && len(out) > 0 {
		out[0].Idempotency = key
	}
	return h.Store.AppendMessages(ctx, out)
}
