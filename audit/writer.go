package audit

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/internal/fserr"
	"github.com/avaagent/ava/redact"
)

// Defaults of [Options].
const (
	DefaultSyncInterval = 200 * time.Millisecond
	DefaultQueueSize    = 4096
)

const (
	maxBatch       = 4096    // requests written in one batch
	maxBatchBytes  = 4 << 20 // bytes written in one batch
	maxOpenTraces  = 1024    // trace files kept open at once
	traceIdleClose = time.Minute
)

// ErrClosed is returned by a [Writer] used after Close.
var ErrClosed = errors.New("audit writer closed")

// Options configures a [Writer].
type Options struct {
	// SyncInterval bounds how long written entries wait for an fsync
	// (default 200ms).
	SyncInterval time.Duration
	// QueueSize is how many entries may wait to be written before
	// Deliver blocks (default 4096).
	QueueSize int
	// Logger receives write errors (default slog.Default()).
	Logger *slog.Logger
	// Clock decides when a day is over, to close the past day's file, and
	// stamps events without a time (default time.Now).
	Clock func() time.Time
	// Redactor masks secrets in every line. Events published through an
	// [event.Hub] with a redactor arrive masked already, so Ava's own
	// writer has none; a writer fed some other way should have one.
	Redactor *redact.Redactor
	// Secrets, when Redactor is nil, are values to mask: the writer then
	// builds its own [redact.Redactor] from them.
	Secrets []string
}

// redactorOf returns the redactor options ask for; nil when none.
func redactorOf(r *redact.Redactor, secrets []string) *redact.Redactor {
	if r == nil && len(secrets) > 0 {
		return redact.New(redact.Options{Secrets: secrets})
	}
	return r
}

// request is one queued entry, or a barrier (Sync) when line is nil.
type request struct {
	day   string // UTC date of the daily file
	trace string // subagent ID, or "" for no trace
	ends  bool   // the trace's run ended (SessionEnd): its file may close
	line  []byte // redacted JSON line ending in '\n'
	done  chan error
	// set by the writer goroutine
	files [2]*appendFile
	err   error
}

// The Writer is one of the Hub's sinks.
var _ event.Sink = (*Writer)(nil)

// Writer is the audit log sink; see the package doc for its delivery
// rules. It is safe for concurrent use.
type Writer struct {
	root         string
	syncInterval time.Duration
	log          *slog.Logger
	clock        func() time.Time
	redactor     *redact.Redactor

	mu      sync.RWMutex // guards closed and sending on queue
	closed  bool
	queue   chan request
	stopped chan struct{}

	closeOnce sync.Once
	closeErr  error

	errMu sync.Mutex
	err   error // sticky write error, see package doc

	// Owned by the writer goroutine.
	daily       map[string]*appendFile
	traces      map[string]*appendFile
	openErrs    map[string]error // files that failed to open in this batch
	touched     []*appendFile
	okSinceFail bool
}

// NewWriter returns a writer for the data root and starts its goroutine;
// Close stops it.
func NewWriter(root string, opts Options) (*Writer, error) {
	if root == "" {
		return nil, errors.New("new audit writer: empty data root")
	}
	if opts.SyncInterval < 0 || opts.QueueSize < 0 {
		return nil, fmt.Errorf("new audit writer: negative SyncInterval (%v) or QueueSize (%d)", opts.SyncInterval, opts.QueueSize)
	}
	for _, dir := range []string{LogDir(root), TraceDir(root)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fserr.Wrap("create audit log directory", dir, err)
		}
	}
	w := &Writer{
		root:         root,
		syncInterval: cmpOr(opts.SyncInterval, DefaultSyncInterval),
		log:          cmpOrPtr(opts.Logger, slog.Default()).With("component", "audit"),
		clock:        opts.Clock,
		redactor:     redactorOf(opts.Redactor, opts.Secrets),
		queue:        make(chan request, cmpOr(opts.QueueSize, DefaultQueueSize)),
		stopped:      make(chan struct{}),
		daily:        map[string]*appendFile{},
		traces:       map[string]*appendFile{},
		openErrs:     map[string]error{},
	}
	if w.clock == nil {
		w.clock = time.Now
	}
	go w.run()
	return w, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func cmpOrPtr[T any](v, def *T) *T {
	if v == nil {
		return def
	}
	return v
}

// Deliver queues ev for the audit log when its type is an audit type
// (others are ignored). It blocks while the queue is full. It returns an
// error when ev cannot be encoded, after Close, or while an earlier write
// has failed (see the package doc); the entry itself is written later.
func (w *Writer) Deliver(ev event.Event) error {
	if !ev.Type.IsAudit() {
		return nil
	}
	req, err := w.prepare(ev)
	if err != nil {
		return err
	}
	if err := w.enqueue(req); err != nil {
		return err
	}
	return w.stickyErr()
}

// DeliverSync is Deliver that returns only once the entry is written and
// fsynced (in the daily log and, for a subagent, its trace), with the
// error of that write if any. Use it for lifecycle entries.
func (w *Writer) DeliverSync(ev event.Event) error {
	if !ev.Type.IsAudit() {
		return nil
	}
	req, err := w.prepare(ev)
	if err != nil {
		return err
	}
	req.done = make(chan error, 1)
	if err := w.enqueue(req); err != nil {
		return err
	}
	return <-req.done
}

// Sync returns once every entry delivered before it is written and
// fsynced, with the writer's current error (see the package doc).
func (w *Writer) Sync() error {
	req := request{done: make(chan error, 1)}
	if err := w.enqueue(req); err != nil {
		return err
	}
	return <-req.done
}

// Close writes and fsyncs what is queued, closes the files and stops the
// goroutine. It returns the writer's error, if any. Later calls return the
// same result.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.queue)
		w.mu.Unlock()
		<-w.stopped
		w.closeErr = w.stickyErr()
	})
	return w.closeErr
}

// prepare encodes and redacts ev in the caller's goroutine.
func (w *Writer) prepare(ev event.Event) (request, error) {
	if ev.Time.IsZero() {
		ev.Time = w.clock()
	}
	line, err := ev.MarshalJSON()
	if err != nil {
		return request{}, fmt.Errorf("audit: encode %s event of %s: %w", ev.Type, ev.Session, err)
	}
	line = append(w.redactor.Redact(line), '\n')
	req := request{day: ev.Time.UTC().Format(dayLayout), line: line}
	if IsSubagentID(ev.Agent) {
		req.trace, req.ends = ev.Agent, ev.Type == event.SessionEnd
	}
	return req, nil
}

func (w *Writer) enqueue(req request) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	w.queue <- req
	return nil
}

func (w *Writer) stickyErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// fail records a write error as the writer's error and logs it.
func (w *Writer) fail(err error) {
	w.okSinceFail = false
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.err == nil || w.err.Error() != err.Error() {
		w.log.Error("audit log write failed; entries are being lost", "err", err)
	}
	w.err = err
}

// recovered clears the writer's error after a clean write and fsync.
func (w *Writer) recovered() {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.err != nil {
		w.log.Warn("audit log writes recovered", "previous_err", w.err)
		w.err = nil
	}
}
