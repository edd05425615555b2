package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Estimate is a proposed spawn's estimate (seconds, cents).
type Estimate struct {
	MinSeconds       int      `json:"minSeconds"`
	MaxSeconds       int      `json:"maxSeconds"`
	TypicalSeconds   int      `json:"typicalSeconds,omitempty"`
	MaxCostCents     float64  `json:"maxCostCents"`
	TypicalCostCents float64  `json:"typicalCostCents,omitempty"`
	Model            string   `json:"model"`
	Tools            []string `json:"tools"`
	// Basis is "limits" (no past runs) or "history" (Runs past runs).
	Basis string `json:"basis"`
	Runs  int    `json:"runs,omitempty"`
}

// Proposal is a spawn awaiting the person's decision (GET /api/spawns).
type Proposal struct {
	ID string `json:"id"`
	// Kind is spawn (subagents) or process (a long run_bash or
	// python_exec call of the orchestrator's: Role is the tool, Task the
	// command; its turn waits for the answer).
	Kind       string `json:"kind,omitempty"`
	SessionKey string `json:"sessionKey"`
	// Status is pending, confirmed, rejected or expired.
	Status string `json:"status"`
	// Mode is single, parallel or chain; a group's Role and Task join
	// its members', listed in Tasks.
	Mode      string    `json:"mode"`
	Role      string    `json:"role"`
	Task      string    `json:"task"`
	Tasks     []string  `json:"tasks,omitempty"`
	Estimate  Estimate  `json:"estimate"`
	Rationale string    `json:"rationale,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Text is the proposal as shown to the person.
	Text string `json:"text"`
}

// ProposalList is the answer of GET /api/spawns.
type ProposalList struct {
	Proposals []Proposal `json:"proposals"`
}

// Change is a "modify" decision's config: zero fields stay as proposed.
type Change struct {
	Model          string  `json:"model,omitempty"`
	MaxCostCents   float64 `json:"maxCostCents,omitempty"`
	TimeoutSeconds float64 `json:"timeoutSeconds,omitempty"`
	MaxTokens      int     `json:"maxTokens,omitempty"`
	MaxIterations  int     `json:"maxIterations,omitempty"`
}

// Decisions of POST /api/spawns/{id}/confirm.
const (
	DecisionYes    = "yes"
	DecisionNo     = "no"
	DecisionModify = "modify"
)

// ConfirmRequest is the body of POST /api/spawns/{id}/confirm: a
// Decision (with Config for modify), or instead the person's own words
// in Answer ("yes but use haiku"), which the daemon parses; an unclear
// answer is refused with 422 and decides nothing.
type ConfirmRequest struct {
	Decision string  `json:"decision,omitempty"`
	Config   *Change `json:"config,omitempty"`
	Answer   string  `json:"answer,omitempty"`
}

// Decided is the answer of POST /api/spawns/{id}/confirm.
type Decided struct {
	Proposal Proposal `json:"proposal"`
	// Decision is confirmed or rejected.
	Decision string `json:"decision"`
	// Change is the modification applied, as shown to the person.
	Change      string   `json:"change,omitempty"`
	SubagentIDs []string `json:"subagentIds,omitempty"`
	GroupID     string   `json:"groupId,omitempty"`
}

// Proposals lists the spawns awaiting a decision, of every session or
// of sessionKey.
func (c *Client) Proposals(ctx context.Context, sessionKey string) ([]Proposal, error) {
	q := url.Values{"status": {"pending"}}
	if sessionKey != "" {
		q.Set("sessionKey", sessionKey)
	}
	var l ProposalList
	err := c.do(ctx, http.MethodGet, "/api/spawns?"+q.Encode(), nil, &l)
	return l.Proposals, err
}

// Confirm decides proposal id.
func (c *Client) Confirm(ctx context.Context, id string, r ConfirmRequest) (Decided, error) {
	var d Decided
	return d, c.do(ctx, http.MethodPost, "/api/spawns/"+url.PathEscape(id)+"/confirm", r, &d)
}

// Question is a subagent's open question to the person (ask_user).
type Question struct {
	ID         string    `json:"id"`
	SessionKey string    `json:"sessionKey"`
	SubagentID string    `json:"subagentId"`
	Role       string    `json:"role"`
	Question   string    `json:"question"`
	AskedAt    time.Time `json:"askedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// QuestionList is the body of GET /api/questions.
type QuestionList struct {
	Questions []Question `json:"questions"`
}

// AnswerRequest is the body of POST /api/questions/{id}/answer.
// SessionKey, when set, must be the question's session.
type AnswerRequest struct {
	Answer     string `json:"answer"`
	SessionKey string `json:"sessionKey,omitempty"`
}

// Questions lists the open questions, of one session when sessionKey is
// set.
func (c *Client) Questions(ctx context.Context, sessionKey string) ([]Question, error) {
	var l QuestionList
	path := "/api/questions"
	if sessionKey != "" {
		path += "?" + url.Values{"sessionKey": {sessionKey}}.Encode()
	}
	err := c.do(ctx, http.MethodGet, path, nil, &l)
	return l.Questions, err
}

// Answer answers an open question.
func (c *Client) Answer(ctx context.Context, id string, r AnswerRequest) (Question, error) {
	var q Question
	err := c.do(ctx, http.MethodPost, "/api/questions/"+url.PathEscape(id)+"/answer", r, &q)
	return q, err
}
