package record

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/store"
)

// Scanner is one row of a driver's result: *sql.Row, *sql.Rows,
// pgx.Row, pgx.Rows. Its integers are scanned into int64 and strings
// into string, which both drivers convert to.
type Scanner interface {
	Scan(dest ...any) error
}

// Rows is a driver's result rows (*sql.Rows, pgx.Rows); the caller
// closes them.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Collect scans every row of rows with scan: all of them (nil for
// none), or the first error.
func Collect[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// RunColumns are the columns ScanRun reads, in its order.
const RunColumns = `id, short_id, session_key, parent_session, parent_agent, group_id, mode,
	role, task, model, config, status, result, error, tokens, cost_cents, iterations,
	created_at, started_at, ended_at, announced, owner, attempts, active_ms, turn_started_at`

// ScanRun reads a run's RunColumns; the driver's error (no rows) is
// returned as it is.
func ScanRun(sc Scanner) (store.Run, error) {
	var (
		r                  store.Run
		config, result     sql.NullString
		status             string
		tokens, iterations int64
		created, attempts  int64
		activeMS           int64
		started, ended     sql.NullInt64
		turnStarted        sql.NullInt64
	)
	err := sc.Scan(&r.ID, &r.ShortID, &r.SessionKey, &r.ParentSession, &r.ParentAgent, &r.GroupID,
		&r.Mode, &r.Role, &r.Task, &r.Model, &config, &status, &result, &r.Error, &tokens,
		&r.CostCents, &iterations, &created, &started, &ended, &r.Announced, &r.Owner, &attempts,
		&activeMS, &turnStarted)
	if err != nil {
		return store.Run{}, err
	}
	r.Status, r.Tokens, r.Iterations, r.Attempts = lifecycle.Status(status), int(tokens), int(iterations), int(attempts)
	r.Config, r.Result = RawJSON(config), RawJSON(result)
	r.CreatedAt, r.StartedAt, r.EndedAt = FromNS(created), TimePtr(started), TimePtr(ended)
	r.Active, r.TurnStartedAt = time.Duration(activeMS)*time.Millisecond, TimePtr(turnStarted)
	return r, nil
}

// PendingColumns are the columns ScanPending reads, in its order.
const PendingColumns = `id, session_key, config, estimate_min_seconds, estimate_max_seconds,
	max_cost_cents, tools, rationale, status, created_at, expires_at, run_id`

// ScanPending reads a pending spawn's PendingColumns; the driver's error
// (no rows) is returned as it is.
func ScanPending(sc Scanner) (store.PendingSpawn, error) {
	var (
		p                store.PendingSpawn
		config           sql.NullString
		tools            string
		minS, maxS       int64
		created, expires int64
	)
	err := sc.Scan(&p.ID, &p.SessionKey, &config, &minS, &maxS,
		&p.MaxCostCents, &tools, &p.Rationale, &p.Status, &created, &expires, &p.RunID)
	if err != nil {
		return store.PendingSpawn{}, err
	}
	if err := json.Unmarshal([]byte(tools), &p.Tools); err != nil {
		return store.PendingSpawn{}, fmt.Errorf("pending spawn %s: stored tools: %w", p.ID, err)
	}
	p.EstimateMinSeconds, p.EstimateMaxSeconds = int(minS), int(maxS)
	p.Config, p.CreatedAt, p.ExpiresAt = RawJSON(config), FromNS(created), FromNS(expires)
	return p, nil
}

// SessionColumns are the columns ScanSession reads, in its order.
const SessionColumns = `key, title, created_at, updated_at, budget_cents, spent_cents`

// ScanSession reads a session's SessionColumns; the driver's error (no
// rows) is returned as it is.
func ScanSession(sc Scanner) (store.Session, error) {
	var (
		s                store.Session
		created, updated int64
	)
	if err := sc.Scan(&s.Key, &s.Title, &created, &updated, &s.BudgetCents, &s.SpentCents); err != nil {
		return store.Session{}, err
	}
	s.CreatedAt, s.UpdatedAt = FromNS(created), FromNS(updated)
	return s, nil
}

// MessageColumns are the columns ScanMessage reads, in its order.
const MessageColumns = `id, session_key, role, sender, text, blocks, run_id, created_at`

// ScanMessage reads a message's MessageColumns.
func ScanMessage(sc Scanner) (store.Message, error) {
	var (
		m      store.Message
		blocks sql.NullString
		at     int64
	)
	if err := sc.Scan(&m.ID, &m.SessionKey, &m.Role, &m.Sender, &m.Text, &blocks, &m.RunID, &at); err != nil {
		return store.Message{}, err
	}
	m.Blocks, m.CreatedAt = RawJSON(blocks), FromNS(at)
	return m, nil
}

// ScanMemory reads a memory's id, content, tags, source and created_at.
func ScanMemory(sc Scanner) (store.Memory, error) {
	var (
		m    store.Memory
		tags string
		at   int64
	)
	if err := sc.Scan(&m.ID, &m.Content, &tags, &m.Source, &at); err != nil {
		return store.Memory{}, err
	}
	if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
		return store.Memory{}, fmt.Errorf("memory %d: stored tags: %w", m.ID, err)
	}
	m.CreatedAt = FromNS(at)
	return m, nil
}

// ScanInstance reads an instance's id, host, pid, started_at and
// heartbeat_at.
func ScanInstance(sc Scanner) (store.Instance, error) {
	var (
		in                 store.Instance
		pid, started, beat int64
	)
	if err := sc.Scan(&in.ID, &in.Host, &pid, &started, &beat); err != nil {
		return store.Instance{}, err
	}
	in.PID, in.StartedAt, in.HeartbeatAt = int(pid), FromNS(started), FromNS(beat)
	return in, nil
}
