package hooks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/hookspec"
)

// Notice is one event as hooks hear it: its hook event name, the role
// whose subagent caused it ("" for a session's own), the run it belongs
// to (the subagent's short ID, "" for a session's own: a hook gets one
// run's events in order), and its JSON body.
type Notice struct {
	Event string
	Role  string
	Run   string
	Body  []byte
}

// Entry is the body of the events that are not a subagent's lifecycle
// entry (session:idle, proposal, question): the seed 002 agent_event
// shape (type, timestamp, eventType) with the fields of the event.
type Entry struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	EventType string `json:"eventType"`
	// Session is the session the event happened in.
	Session     string `json:"session"`
	RequestedBy string `json:"requestedBy,omitempty"`
	// State is the session's state (session:idle).
	State string `json:"state,omitempty"`
	// ProposalID, Mode, Tasks, MaxCostCents, EstimateSeconds and
	// ExpiresAt describe a proposal; Summary is it as shown.
	ProposalID      string   `json:"proposalId,omitempty"`
	AgentName       string   `json:"agentName,omitempty"`
	Mode            string   `json:"mode,omitempty"`
	Task            string   `json:"task,omitempty"`
	Tasks           []string `json:"tasks,omitempty"`
	MaxCostCents    *float64 `json:"maxCostCents,omitempty"`
	EstimateSeconds []int    `json:"estimateSeconds,omitempty"`
	// QuestionID, JobID and Question describe a subagent's question.
	QuestionID string `json:"questionId,omitempty"`
	JobID      string `json:"jobId,omitempty"`
	Question   string `json:"question,omitempty"`
	ExpiresAt  string `json:"expiresAt,omitempty"`
	Summary    string `json:"summary,omitempty"`
}

// NoticeOf is what hooks hear of ev, and whether they hear anything: a
// subagent's lifecycle events are the entry the session file gets (in
// the data root root), a session's idle state, a proposal and a question
// an Entry. Other events are not heard.
func NoticeOf(ev event.Event, root string) (Notice, bool, error) {
	if e, ok, err := audit.LifecycleEntryOf(ev); ok || err != nil {
		if err != nil {
			return Notice{}, false, err
		}
		e = e.AsFiled(root, ev.Time)
		b, err := e.MarshalJSON()
		if err != nil {
			return Notice{}, false, fmt.Errorf("hook body of %s: %w", e.EventType, err)
		}
		return Notice{Event: string(e.EventType), Role: e.AgentName, Run: e.JobID, Body: b}, true, nil
	}
	entry, role, ok, err := entryOf(ev)
	if !ok || err != nil {
		return Notice{}, false, err
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return Notice{}, false, fmt.Errorf("hook body of %s: %w", entry.EventType, err)
	}
	return Notice{Event: entry.EventType, Role: role, Run: entry.JobID, Body: b}, true, nil
}

// entryOf is the Entry of a session, proposal or question event.
func entryOf(ev event.Event) (Entry, string, bool, error) {
	e := Entry{Type: audit.AgentEvent, Timestamp: ev.Time.UTC().Format(event.TimeLayout), Session: ev.Session, RequestedBy: ev.User}
	switch ev.Type {
	case event.SessionState:
		var c event.StateContent
		if err := ev.Decode(&c); err != nil {
			return Entry{}, "", false, fmt.Errorf("hook body of %s: %w", ev.Type, err)
		}
		if c.State != "idle" {
			return Entry{}, "", false, nil
		}
		e.EventType, e.State = hookspec.SessionIdle, c.State
		return e, "", true, nil
	case event.SpawnProposed:
		var c event.SpawnProposedContent
		if err := ev.Decode(&c); err != nil {
			return Entry{}, "", false, fmt.Errorf("hook body of %s: %w", ev.Type, err)
		}
		cost := c.Estimate.MaxCostCents
		e.EventType, e.ProposalID, e.AgentName, e.Mode, e.Task, e.Tasks = hookspec.Proposal, c.PendingID, c.Role, c.Mode, c.Task, c.Tasks
		e.MaxCostCents, e.EstimateSeconds = &cost, []int{c.Estimate.MinSeconds, c.Estimate.MaxSeconds}
		e.ExpiresAt, e.Summary = stamp(c.ExpiresAt), c.Text
		return e, "", true, nil
	case event.UserQuestion:
		var c event.QuestionContent
		if err := ev.Decode(&c); err != nil {
			return Entry{}, "", false, fmt.Errorf("hook body of %s: %w", ev.Type, err)
		}
		e.EventType, e.QuestionID, e.JobID, e.AgentName, e.Question = hookspec.Question, c.QuestionID, c.SubagentID, c.Role, c.Question
		e.ExpiresAt = stamp(c.ExpiresAt)
		return e, c.Role, true, nil
	}
	return Entry{}, "", false, nil
}

// stamp is t in the audit log's format, "" when zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(event.TimeLayout)
}

// Sample is a made-up event named name, for `ava hooks test`: its body
// has the shape of the real one and says it is a test ("test": true
// and ids that name no real run).
func Sample(name string, now time.Time) (Notice, error) {
	if !hookspec.Known(name) {
		return Notice{}, fmt.Errorf("unknown hook event %q", name)
	}
	var b []byte
	var err error
	switch name {
	case hookspec.SessionIdle, hookspec.Proposal, hookspec.Question:
		e := Entry{Type: audit.AgentEvent, Timestamp: stamp(now), EventType: name, Session: "ava:test:hook", Summary: "a test of the hook (ava hooks test)"}
		switch name {
		case hookspec.SessionIdle:
			e.State = "idle"
		case hookspec.Proposal:
			e.ProposalID, e.AgentName, e.Mode, e.Task = "P-000000", "researcher", "single", "a test proposal"
		default:
			e.QuestionID, e.JobID, e.AgentName, e.Question = "Q-000000", "S-000000", "researcher", "a test question?"
		}
		b, err = json.Marshal(struct {
			Entry
			Test bool `json:"test"`
		}{e, true})
	default:
		b, err = sampleLifecycle(name, now)
	}
	if err != nil {
		return Notice{}, fmt.Errorf("sample %s: %w", name, err)
	}
	return Notice{Event: name, Role: "researcher", Body: b}, nil
}

// sampleLifecycle is a made-up lifecycle entry of type name, with
// "test": true.
func sampleLifecycle(name string, now time.Time) ([]byte, error) {
	e := audit.LifecycleEntry{Timestamp: now, EventType: audit.LifecycleType(name), JobID: "S-000000", RequestedBy: "assistant",
		AgentName: "researcher", Mode: audit.ModeSingle, StartedAt: now.Add(-time.Second), Model: "offline/scripted",
		Summary: "a test of the hook (ava hooks test)"}
	switch name {
	case hookspec.SubagentComplete, hookspec.SubagentError, hookspec.SubagentAborted:
		e.CompletedAt, e.DurationMs = now, 1000
	}
	b, err := e.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["test"] = true
	return json.Marshal(m)
}
