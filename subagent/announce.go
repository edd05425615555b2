package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// maxAnnouncedOutput caps the output text put in the parent's history;
// the whole result stays in the run record.
const maxAnnouncedOutput = 8000

// deliver hands a finished turn's result to the parent. A background
// result becomes a [Subagent] message in the parent's history, exactly
// once (store.AnnounceResult); a waited-for result was returned to the
// waiting tool call, so the run is only marked delivered. A cancelled
// run's result never reaches the parent. A run interrupted by shutdown
// is left undelivered: the next Start announces it.
func (h *Handle) deliver(ctx context.Context, r Result) {
	m := h.m
	if !h.delivers(r.Status) {
		return
	}
	msg := announcement(h.req.Parent.SessionKey, h.uuid, h.req.Config.Task, r, m.postedBy(ctx, h.req.groupID, h.uuid))
	if err := m.announce(ctx, h.uuid, h.writer(), msg); err != nil {
		m.log.Error("announce result", "id", h.id, "err", err)
	}
}

// deliveryWait bounds how long a parent's turn waits for results on
// their way to its history (a store that cannot take the run's end keeps
// it trying for longer; the turn then goes on without it, and the result
// is announced after it).
const deliveryWait = 5 * time.Second

// deliveries counts, per parent session, the background results whose
// run's end may already be seen (its record is being written or is
// written) and that are not yet announced or held.
type deliveries struct {
	mu      sync.Mutex
	pending map[string]int
	changed chan struct{} // closed, and replaced, when one ends
}

// begin counts one for parent; the returned func ends it.
func (d *deliveries) begin(parent string) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending, d.changed = map[string]int{}, make(chan struct{})
	}
	d.pending[parent]++
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.pending[parent]--; d.pending[parent] <= 0 {
			delete(d.pending, parent)
		}
		close(d.changed)
		d.changed = make(chan struct{})
	}
}

// wait returns once parent has no result on its way, or ctx ends.
func (d *deliveries) wait(ctx context.Context, parent string) {
	for {
		d.mu.Lock()
		n, changed := d.pending[parent], d.changed
		d.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// delivers reports whether a turn that ends with status delivers its
// result to the parent's history (see deliver).
func (h *Handle) delivers(status lifecycle.Status) bool {
	return status != lifecycle.Interrupted && h.req.Parent.SessionKey != "" && !h.deliveredOnFinish(status)
}

// heldResults are background results whose parent session has a turn
// running in this process, kept until it ends (Manager.HoldResults).
type heldResults struct {
	// mu is held across the busy check and the announcement or the
	// hold, and by FlushResults: a result is either stored before a
	// turn's flush or held for it, never lost between the two.
	mu   sync.Mutex
	busy func(parent string) bool
	// by are the held messages by parent session, by run ID, and their
	// order of arrival.
	by    map[string]map[string]heldResult
	order map[string][]string
}

// heldResult is a held [Subagent] message and the lease it is announced
// under (see store.RunStore.AnnounceResult).
type heldResult struct {
	msg   store.Message
	owner string
}

// HoldResults makes the manager hold the background results of a parent
// session while busy reports that a turn of it runs: they are announced
// by FlushResults, after the turn's messages, so that a result that
// finished during a turn comes after the request that started it in the
// parent's history. A held result stays unannounced in the store: after
// a crash, recovery announces it. Set it before spawning.
func (m *Manager) HoldResults(busy func(parent string) bool) {
	m.held.mu.Lock()
	defer m.held.mu.Unlock()
	m.held.busy = busy
}

// FlushResults announces the results held for the parent session, in
// the order they finished. One that cannot be stored is logged and left
// unannounced in the store, for recovery to announce.
//
// A turn of the parent calls it as it starts (busy from then on), so it
// first waits, up to deliveryWait, for the background results of the
// parent whose run's end is recorded but not yet announced or held (see
// deliveries): a person who saw a subagent finish and asks about it gets
// a turn whose history has its result.
func (m *Manager) FlushResults(ctx context.Context, parent string) {
	wctx, cancel := context.WithTimeout(ctx, deliveryWait)
	m.deliveries.wait(wctx, parent)
	cancel()
	m.held.mu.Lock()
	defer m.held.mu.Unlock()
	msgs, order := m.held.by[parent], m.held.order[parent]
	delete(m.held.by, parent)
	delete(m.held.order, parent)
	for _, id := range order {
		if _, err := m.opt.Store.AnnounceResult(ctx, id, msgs[id].owner, msgs[id].msg); err != nil {
			m.log.Error("announce a held result", "run", id, "session", parent, "err", err)
		}
	}
}

// announce stores a background result in its parent's history, exactly
// once (store.AnnounceResult, fenced by owner, the run's owner as the
// caller knows it), or holds it while a turn of the parent runs
// (HoldResults).
func (m *Manager) announce(ctx context.Context, runID, owner string, msg store.Message) error {
	hr := &m.held
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.busy != nil && hr.busy(msg.SessionKey) {
		if hr.by == nil {
			hr.by, hr.order = map[string]map[string]heldResult{}, map[string][]string{}
		}
		if hr.by[msg.SessionKey] == nil {
			hr.by[msg.SessionKey] = map[string]heldResult{}
		}
		if _, ok := hr.by[msg.SessionKey][runID]; !ok {
			hr.order[msg.SessionKey] = append(hr.order[msg.SessionKey], runID)
		}
		hr.by[msg.SessionKey][runID] = heldResult{msg: msg, owner: owner}
		return nil
	}
	_, err := m.opt.Store.AnnounceResult(ctx, runID, owner, msg)
	return err
}

// deliveredOnFinish reports whether a turn ending with status needs no
// announcement message, so that the run is marked delivered in the same
// write that records its end: a waited-for result went back to the waiting
// call, and a cancelled one must never reach the parent.
func (h *Handle) deliveredOnFinish(status lifecycle.Status) bool {
	if h.req.Parent.SessionKey == "" || status == lifecycle.Interrupted {
		return false
	}
	return status == lifecycle.Cancelled || !h.req.Background
}

// announceStored delivers a run that ended without being announced
// (found at start-up).
func (m *Manager) announceStored(ctx context.Context, run store.Run) error {
	if run.Status == lifecycle.Cancelled {
		return m.opt.Store.MarkAnnounced(ctx, run.ID)
	}
	var r Result
	if len(run.Result) > 0 {
		_ = json.Unmarshal(run.Result, &r)
	}
	r.SubagentID, r.Status = run.ShortID, lifecycle.Status(run.Status)
	if run.Status == lifecycle.Interrupted {
		r.Summary = interruptedRunSummary(run.Error)
		r.Output, r.OutputFormat = json.RawMessage("null"), "none"
	}
	msg := announcement(run.ParentSession, run.ID, run.Task, r, m.postedBy(ctx, run.GroupID, run.ID))
	if err := m.announce(ctx, run.ID, run.Owner, msg); err != nil {
		return fmt.Errorf("announce %s: %w", run.ShortID, err)
	}
	return nil
}

// writePartial writes what an unfinished run had found.
func writePartial(b *strings.Builder, p *Partial) {
	if p == nil {
		return
	}
	b.WriteString("Partial work (it ended before finishing):\n")
	if p.Text != "" {
		fmt.Fprintf(b, "Last text: %s\n", p.Text)
	}
	for _, t := range p.ToolResults {
		mark := "ok"
		if !t.OK {
			mark = "failed"
		}
		fmt.Fprintf(b, "- %s (%s): %s\n", t.Tool, mark, strings.Join(strings.Fields(t.Excerpt), " "))
	}
}

// announcement is the [Subagent] message of seed 003: a "[Task: …]"
// prefix, then the result, and for a group member the findings it
// posted to its group's board (posted, FormatFindings; "" for none).
func announcement(session, runID, task string, r Result, posted string) store.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "[Task: %s]\n", firstLine(task, 200))
	fmt.Fprintf(&b, "Subagent %s finished: status=%s, %.0fs, %d tokens, %s", r.SubagentID, r.Status, r.DurationSeconds, r.TokensUsed, money.Spend(r.CostCents, r.TokensUsed, false))
	if r.OutputFormat == "json" {
		fmt.Fprintf(&b, ", confidence %.2f", r.Confidence)
	}
	b.WriteString("\n")
	writeField(&b, "Summary", r.Summary)
	writeField(&b, "Error", r.Error)
	if out := outputText(r); out != "" && out != r.Summary {
		if len(out) > maxAnnouncedOutput {
			out = out[:maxAnnouncedOutput] + fmt.Sprintf("\n[… output cut at %d of %d bytes; the full result is in subagent_status %s]", maxAnnouncedOutput, len(out), r.SubagentID)
		}
		fmt.Fprintf(&b, "Output (%s):\n%s\n", r.OutputFormat, out)
	}
	writeCitations(&b, r.Citations)
	writePartial(&b, r.Partial)
	if posted != "" {
		fmt.Fprintf(&b, "Findings it posted to its group's board:\n%s", posted)
	}
	text := b.String()
	// The model reads the result as untrusted data (a subagent's answer
	// may carry what a web page told it); people read it as it is.
	blocks, _ := json.Marshal(llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text("[Subagent] " + tool.Untrusted("subagent "+r.SubagentID, text))}})
	return store.Message{SessionKey: session, Role: store.RoleSubagent, Sender: store.SenderSubagent, Text: text, Blocks: blocks, RunID: runID}
}

// writeField writes "name: text" (nothing for an empty text), the
// text's lines after the first quoted (tool.Quote), so that a multi-line
// summary or error (one that quotes a tool's output, say) keeps every
// line and where it ends: orchestrator.ParseAnnouncement reads it back
// whole for the results digest, and none of its lines reads as the
// announcement's next field.
func writeField(b *strings.Builder, name, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	fmt.Fprintf(b, "%s: %s\n", name, strings.TrimPrefix(tool.Quote(text), tool.QuotePrefix))
}

// outputText renders a result's output for people and prompts.
func outputText(r Result) string {
	if len(r.Output) == 0 || string(r.Output) == "null" {
		return ""
	}
	if r.OutputFormat == "text" {
		var s string
		if json.Unmarshal(r.Output, &s) == nil {
			return s
		}
	}
	return string(r.Output)
}
