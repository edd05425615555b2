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
// each result gets an equal share for its task and summary, its ID and
// status always.
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
// do not fit in the prompt's window: each subagent's ID, status, task and
// summary, oldest first, as untrusted data.
func ResultsDigest(results []store.Message) string {
	share := max(digestBudget/max(len(results), 1)-40, 0)
	var b strings.Builder
	for _, m := range results {
		a := ParseAnnouncement(m.Text)
		fmt.Fprintf(&b, "- %s status=%s", a.ID, a.Status)
		if detail := digestDetail(a, share); detail != "" {
			b.WriteString(": " + detail)
		}
		b.WriteString("\n")
	}
	head := fmt.Sprintf("%d more subagent results arrived since your last answer than this conversation's window holds. "+
		"Each one is listed here once, oldest first, with its status and summary; "+
		"read a full result with subagent_status and its ID.", len(results))
	return "[Subagent] " + head + "\n" + tool.Untrusted("subagent results digest", b.String())
}

// digestDetail is a result's task and summary (or error) in at most n
// bytes.
func digestDetail(a Announcement, n int) string {
	parts := []string{}
	if a.Task != "" {
		parts = append(parts, "task: "+a.Task)
	}
	switch {
	case a.Summary != "":
		parts = append(parts, "summary: "+a.Summary)
	case a.Error != "":
		parts = append(parts, "error: "+a.Error)
	}
	s := strings.Join(strings.Fields(strings.Join(parts, "; ")), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
		if n == 0 {
			s = ""
		}
	}
	return s
}

// Announcement is what a [Subagent] message says (subagent's
// announcement format: "[Task: …]", "Subagent S-… finished: status=…, …",
// "Summary: …", "Error: …").
type Announcement struct {
	ID, Status, Task, Summary, Error string
}

// ParseAnnouncement reads a [Subagent] message's text; fields it does not
// find stay empty ("?" for the ID and status).
func ParseAnnouncement(text string) Announcement {
	a := Announcement{ID: "?", Status: "?"}
	for line := range strings.SplitSeq(text, "\n") {
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
			a.Summary = strings.TrimPrefix(line, "Summary: ")
		case strings.HasPrefix(line, "Error: ") && a.Error == "":
			a.Error = strings.TrimPrefix(line, "Error: ")
		}
	}
	return a
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
	out, err := transcript.ToStore(session, store.SenderAva, msgs)
	if err != nil {
		return err
	}
	return h.Store.AppendMessages(ctx, out)
}
