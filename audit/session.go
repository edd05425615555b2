package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/fserr"
	"github.com/avaagent/ava/internal/groupcommit"
	"github.com/avaagent/ava/lifecycle"
	"github.com/avaagent/ava/redact"
)

// LifecycleType is the eventType of a session lifecycle entry.
type LifecycleType string

// Lifecycle entry types (seed 002, plus subagent:queued: a run that
// waits for a concurrency slot; its subagent:start follows when it gets
// one, or its end entry when it ends waiting; and subagent:resumed: a run
// whose process stopped was taken over by another process and goes on
// from its last checkpoint, attempt saying how many times so far; its end
// entry follows as any run's).
const (
	SubagentQueued   LifecycleType = "subagent:queued"
	SubagentResumed  LifecycleType = "subagent:resumed"
	SubagentStart    LifecycleType = "subagent:start"
	SubagentComplete LifecycleType = "subagent:complete"
	SubagentError    LifecycleType = "subagent:error"
	SubagentAborted  LifecycleType = "subagent:aborted"
)

// Mode is how a job's subagents were spawned.
type Mode string

// Spawn modes.
const (
	ModeSingle   Mode = "single"
	ModeParallel Mode = "parallel"
	ModeChain    Mode = "chain"
)

// AgentEvent is the "type" of every lifecycle entry.
const AgentEvent = "agent_event"

// MaxInlineSummary is the longest summary kept in a lifecycle entry;
// a longer one is moved to an output file.
const MaxInlineSummary = 2048

// shortSummary is how many characters of a moved summary stay inline.
const shortSummary = 240

// Usage is a job's token use and cost, in pi-agent's usage shape.
type Usage struct {
	Input      int  `json:"input"`
	Output     int  `json:"output"`
	CacheRead  int  `json:"cacheRead"`
	CacheWrite int  `json:"cacheWrite"`
	Cost       Cost `json:"cost"`
}

// Cost is a job's cost.
type Cost struct {
	// Total is in US dollars.
	Total float64 `json:"total"`
}

// LifecycleEntry is one agent_event line of a session file. Its JSON form
// has exactly the fields of DESIGN.md (type, timestamp, eventType, jobId,
// requestedBy, agentName, mode, pid?, startedAt, completedAt?,
// durationMs?, model, usage, status?, summary?) plus outputPath?; times
// are RFC 3339 UTC with milliseconds.
type LifecycleEntry struct {
	// Timestamp is when the entry is written (default: now).
	Timestamp   time.Time
	EventType   LifecycleType
	JobID       string
	RequestedBy string // the user's login, else "assistant" (the default)
	AgentName   string
	Mode        Mode
	PID         int // the subprocess, if any
	StartedAt   time.Time
	CompletedAt time.Time
	DurationMs  int64
	Model       string
	Usage       Usage
	Status      lifecycle.Status
	Summary     string
	// Attempt is the resume attempt: on subagent:resumed, and on the end
	// entry of a run that was resumed or quarantined (0: never resumed).
	Attempt int
	// OutputPath is the absolute path of the file holding the job's
	// output or full summary, set by Append when it moves them there.
	OutputPath string
	// Output is the job's full output. It is never inlined: Append writes
	// it to sessions/outputs/<jobId>.json (valid JSON) or .txt and sets
	// OutputPath.
	Output string
}

type lifecycleWire struct {
	Type        string        `json:"type"`
	Timestamp   string        `json:"timestamp"`
	EventType   LifecycleType `json:"eventType"`
	JobID       string        `json:"jobId"`
	RequestedBy string        `json:"requestedBy"`
	AgentName   string        `json:"agentName"`
	Mode        Mode          `json:"mode"`
	PID         int           `json:"pid,omitempty"`
	StartedAt   string        `json:"startedAt"`
	CompletedAt string        `json:"completedAt,omitempty"`
	DurationMs  *int64        `json:"durationMs,omitempty"`
	Model       string        `json:"model"`
	Usage       Usage         `json:"usage"`
	// Status is seed 002's word (completed, failed, aborted), Reason the
	// precise cause (lifecycle.Status.Seed).
	Status     string `json:"status,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	OutputPath string `json:"outputPath,omitempty"`
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(event.TimeLayout)
}

// MarshalJSON writes the session file form. An entry with a completion
// time always has durationMs, also when it is 0.
func (e LifecycleEntry) MarshalJSON() ([]byte, error) {
	var dur *int64
	if !e.CompletedAt.IsZero() || e.DurationMs != 0 {
		d := e.DurationMs
		if !e.CompletedAt.IsZero() && !e.StartedAt.IsZero() {
			// From the two instants as written (ms), so that the three
			// fields always agree.
			d = e.CompletedAt.Truncate(time.Millisecond).Sub(e.StartedAt.Truncate(time.Millisecond)).Milliseconds()
		}
		dur = &d
	}
	word, reason := e.Status.Seed()
	return json.Marshal(lifecycleWire{Type: AgentEvent, Status: word, Reason: reason, Timestamp: formatTime(e.Timestamp), EventType: e.EventType,
		JobID: e.JobID, RequestedBy: e.RequestedBy, AgentName: e.AgentName, Mode: e.Mode, PID: e.PID,
		StartedAt: formatTime(e.StartedAt), CompletedAt: formatTime(e.CompletedAt), DurationMs: dur,
		Model: e.Model, Usage: e.Usage, Summary: e.Summary, Attempt: e.Attempt, OutputPath: e.OutputPath})
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// errNotLifecycle marks a session line of another type.
var errNotLifecycle = errors.New("not an agent_event entry")

// UnmarshalJSON reads the session file form.
func (e *LifecycleEntry) UnmarshalJSON(b []byte) error {
	var w lifecycleWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Type != AgentEvent {
		return fmt.Errorf("type %q: %w", w.Type, errNotLifecycle)
	}
	var times [3]time.Time
	for i, s := range []string{w.Timestamp, w.StartedAt, w.CompletedAt} {
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("lifecycle entry time: %w", err)
		}
		times[i] = t.UTC()
	}
	*e = LifecycleEntry{Timestamp: times[0], EventType: w.EventType, JobID: w.JobID, RequestedBy: w.RequestedBy,
		AgentName: w.AgentName, Mode: w.Mode, PID: w.PID, StartedAt: times[1], CompletedAt: times[2],
		DurationMs: derefInt64(w.DurationMs), Model: w.Model, Usage: w.Usage, Summary: w.Summary,
		Attempt: w.Attempt, OutputPath: w.OutputPath}
	if w.Status != "" {
		e.Status = lifecycle.FromSeed(w.Status, w.Reason)
	}
	return nil
}

// Validate reports a missing or invalid required field.
func (e LifecycleEntry) Validate() error {
	switch e.EventType {
	case SubagentQueued, SubagentStart, SubagentResumed, SubagentComplete, SubagentError, SubagentAborted:
	default:
		return fmt.Errorf("lifecycle entry: eventType %q is not one of subagent:queued, subagent:start, subagent:resumed, subagent:complete, subagent:error, subagent:aborted", e.EventType)
	}
	switch e.Mode {
	case ModeSingle, ModeParallel, ModeChain:
	default:
		return fmt.Errorf("lifecycle entry %s: mode %q is not one of single, parallel, chain", e.JobID, e.Mode)
	}
	if e.JobID == "" {
		return errors.New("lifecycle entry: empty jobId")
	}
	if e.StartedAt.IsZero() {
		return fmt.Errorf("lifecycle entry %s: startedAt is required", e.JobID)
	}
	if e.EventType != SubagentStart && e.EventType != SubagentQueued && e.EventType != SubagentResumed && e.CompletedAt.IsZero() {
		return fmt.Errorf("lifecycle entry %s: completedAt is required for %s", e.JobID, e.EventType)
	}
	return nil
}

// SessionOptions configures [SessionLogs].
type SessionOptions struct {
	// Clock stamps entries without a Timestamp (default time.Now).
	Clock func() time.Time
	// Redactor masks secrets in entries and output files, as in the
	// audit log (see [Options.Redactor]).
	Redactor *redact.Redactor
	// Secrets, when Redactor is nil, are values to mask.
	Secrets []string
}

// SessionLogs writes lifecycle entries to the session files of a data
// root. It is safe for concurrent use; entries of one session are
// serialised by that session's lock.
type SessionLogs struct {
	root     string
	clock    func() time.Time
	redactor *redact.Redactor

	mu   sync.Mutex
	logs map[string]*SessionLog
}

// NewSessionLogs returns the session logs of root, creating their
// directory (0700) so that one that cannot be made (a file in its place,
// a read-only or full disk) is reported now rather than at the first
// entry.
func NewSessionLogs(root string, opts SessionOptions) (*SessionLogs, error) {
	if root == "" {
		return nil, errors.New("new session logs: empty data root")
	}
	dir := SessionDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fserr.Wrap("create session log directory", dir, err)
	}
	s := &SessionLogs{root: root, clock: opts.Clock, redactor: redactorOf(opts.Redactor, opts.Secrets), logs: map[string]*SessionLog{}}
	if s.clock == nil {
		s.clock = time.Now
	}
	return s, nil
}

// Session returns the log of one session key.
func (s *SessionLogs) Session(key string) (*SessionLog, error) {
	if key == "" {
		return nil, errors.New("session log: empty session key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[key]
	if !ok {
		l = &SessionLog{parent: s, key: key, path: SessionPath(s.root, key)}
		s.logs[key] = l
	}
	return l, nil
}

// Append appends e to the session's file; see [SessionLog.Append].
func (s *SessionLogs) Append(session string, e LifecycleEntry) error {
	l, err := s.Session(session)
	if err != nil {
		return err
	}
	return l.Append(e)
}

// SessionLog is the lifecycle log of one session.
type SessionLog struct {
	parent *SessionLogs
	key    string
	path   string

	// Group commit: appenders queue their lines; one of them (the
	// leader) writes everything queued with one write and one fsync, then
	// tells each waiter. No entry is reported done before it is synced.
	appends groupcommit.Queue[lineAppend]
}

// lineAppend is one queued line and where its outcome goes.
type lineAppend struct {
	line []byte
	done chan error
}

// Path is the session file (sessions/<SanitizeName(key)>.jsonl).
func (l *SessionLog) Path() string { return l.path }

// Append validates e, moves a non-empty Output or a summary longer than
// MaxInlineSummary to sessions/outputs/<jobId>.{json,txt} (keeping a
// shortened summary and setting OutputPath), then appends the entry as
// one line and returns once it is fsynced. A file left with a torn last
// line by a crash gets the entry on a new line.
func (l *SessionLog) Append(e LifecycleEntry) error {
	line, err := l.line(e)
	if err != nil {
		return err
	}
	return l.appendLines(line)
}

// line is e's line in the file, defaults filled in, checked, a large
// output moved to its file (see Append), masked, with its newline.
func (l *SessionLog) line(e LifecycleEntry) ([]byte, error) {
	if e.Timestamp.IsZero() {
		e.Timestamp = l.parent.clock()
	}
	if e.RequestedBy == "" {
		e.RequestedBy = "assistant"
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if err := l.spill(&e); err != nil {
		return nil, err
	}
	line, err := e.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode lifecycle entry %s: %w", e.JobID, err)
	}
	return append(l.parent.redactor.Redact(line), '\n'), nil
}

// appendLines appends whole lines to the file through the group commit
// and returns once they are fsynced.
func (l *SessionLog) appendLines(lines []byte) error {
	done := make(chan error, 1)
	l.appends.Add(lineAppend{line: lines, done: done}, l.flush)
	return <-done
}

// flush writes a batch of lines with one write and one fsync, then
// tells each appender.
func (l *SessionLog) flush(batch []lineAppend) {
	var buf []byte
	for _, a := range batch {
		buf = append(buf, a.line...)
	}
	err := l.writeSynced(buf)
	for _, a := range batch {
		a.done <- err
	}
}

// writeSynced appends batch to the file and fsyncs it.
func (l *SessionLog) writeSynced(batch []byte) error {
	f, err := openAppend(l.path)
	if err != nil {
		return fmt.Errorf("session log %s: %w", l.key, err)
	}
	f.add(batch)
	if err := errors.Join(f.flush(), f.close()); err != nil {
		return fmt.Errorf("session log %s: %w", l.key, err)
	}
	return nil
}

// spill moves a large output or summary to its own file.
func (l *SessionLog) spill(e *LifecycleEntry) error {
	path, data := outputFile(l.parent.root, *e)
	if path == "" {
		return nil
	}
	if err := writeFileAtomic(path, l.parent.redactor.Redact([]byte(data))); err != nil {
		return fmt.Errorf("output of job %s: %w", e.JobID, err)
	}
	*e = e.filed(path)
	return nil
}

// outputFile is the file a large output or summary of e moves to in the
// data root root, and what it holds ("" when nothing moves).
func outputFile(root string, e LifecycleEntry) (path, data string) {
	data, ext := e.Output, ".txt"
	if data != "" && json.Valid([]byte(data)) {
		ext = ".json"
	}
	if data == "" && len(e.Summary) > MaxInlineSummary {
		data = e.Summary
	}
	if data == "" {
		return "", ""
	}
	path = filepath.Join(OutputDir(root), SanitizeName(e.JobID)+ext)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path, data
}

// filed is e pointing at its output file, its summary shortened.
func (e LifecycleEntry) filed(path string) LifecycleEntry {
	e.OutputPath = path
	if len(e.Summary) > MaxInlineSummary {
		e.Summary = Shorten(e.Summary, shortSummary)
	}
	return e
}

// AsFiled is e as the session file of data root root holds it (see
// SessionLog.Append), without writing anything: its output file named,
// its summary shortened, requestedBy and timestamp filled in (now when
// unset). Lifecycle hooks send it.
func (e LifecycleEntry) AsFiled(root string, now time.Time) LifecycleEntry {
	if e.Timestamp.IsZero() {
		e.Timestamp = now
	}
	if e.RequestedBy == "" {
		e.RequestedBy = "assistant"
	}
	if path, _ := outputFile(root, e); path != "" {
		e = e.filed(path)
	}
	return e
}

// writeFileAtomic writes data to path (0600) through a synced temporary
// file and a rename, so readers never see half a file.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fserr.Wrap("create", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename to %s: %w", path, err)
	}
	return syncDir(dir)
}

// ScanLifecycle calls fn with every lifecycle entry of the session file at
// path, skipping (silently) lines of other types and reporting corrupt or
// torn lines to onSkip (when non-nil), as [ScanEntries] does.
func ScanLifecycle(path string, fn func(LifecycleEntry) error, onSkip func(Skip)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("scan session log: %w", err)
	}
	defer f.Close()
	ls := lineScan{path: path, final: true, onSkip: onSkip}
	_, err = ls.run(f, func(raw []byte, no int, complete bool) error {
		var e LifecycleEntry
		err := e.UnmarshalJSON(raw)
		switch {
		case err == nil:
			return fn(e)
		case errors.Is(err, errNotLifecycle):
		case !complete:
			ls.skip(no, "torn last line (no newline at end of file, %d bytes): %s", len(raw), err.Error())
		default:
			ls.skip(no, "not a session entry: %s", err.Error())
		}
		return nil
	})
	return err
}
