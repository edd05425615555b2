package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/audit"
	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/gateway/client"
	"github.com/avaagent/ava/internal/wait"
	"github.com/avaagent/ava/lifecycle"
)

// Backend is where the chat's session lives: this process (Local) or a
// daemon (Remote). Both carry the same session events, so the screen
// reads the same either way.
type Backend interface {
	// Key is the session key ("" until a daemon has named a new one).
	Key() string
	// Follow calls emit with the session's events, from the moment the
	// chat opened, until ctx is done.
	Follow(ctx context.Context, emit func(event.Event)) error
	// Send delivers the person's message: merged into the running
	// request within the merge window, else queued behind it.
	Send(ctx context.Context, message string) error
	// SendTo sends a message to a subagent's session: steered into its
	// conversation while it runs, a follow-up once it ended.
	SendTo(ctx context.Context, key, message string) error
	// Stop stops what runs in a session: the chat's own (key "") or a
	// subagent's.
	Stop(ctx context.Context, key string) (bool, error)
	// Subagents lists the running subagents the session started, with
	// the figures every surface shows.
	Subagents(ctx context.Context) ([]ava.Subagent, error)
	// Log returns the last n entries of a subagent's trace (id "S-…"),
	// or of the session itself (id ""), one formatted line each.
	Log(ctx context.Context, id string, n int) ([]string, error)
	// Confirm answers a proposal yes, for --yes on a daemon whose policy
	// asks; Local has the policy set to never instead.
	Confirm(ctx context.Context, pendingID string) error
	// Answer answers a subagent's question (id "": the only one open).
	Answer(ctx context.Context, id, answer string) error
}

// subagentKey turns a subagent ID into its session key.
func subagentKey(id string) string {
	if strings.Contains(id, ":") {
		return id
	}
	return "ava:subagent:" + id
}

// Local is a session of this process's runtime.
type Local struct {
	Runtime *ava.Runtime
	Session string
	// Options go with every message (user, model, limits).
	Options ava.SendOptions

	once sync.Once
	err  error
	// failed carries turns that failed before they could say so in the
	// session's stream (for example their model could not be built).
	failed chan string
}

// Key is the session key.
func (l *Local) Key() string { return l.Session }

// start checks that the session's stream can be read when the chat
// opens.
func (l *Local) start(ctx context.Context) error {
	l.once.Do(func() {
		l.failed = make(chan string, 16)
		_, l.err = l.Runtime.LastSeq(ctx, l.Session)
	})
	return l.err
}

// failures carries turns that failed outside the session's stream.
func (l *Local) failures() <-chan string {
	_ = l.start(context.Background())
	return l.failed
}

// Follow reads the session's events: its earlier conversation first
// (a continued session's, replayed from the store), then live.
func (l *Local) Follow(ctx context.Context, emit func(event.Event)) error {
	if err := l.start(ctx); err != nil {
		return err
	}
	sub := l.Runtime.Follow(l.Session, 0)
	defer sub.Close()
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, ev := range evs {
			emit(ev)
		}
	}
}

// Send starts a turn (merged or queued behind the running one); a turn
// that fails without a status is reported through Errors.
func (l *Local) Send(ctx context.Context, message string) error {
	if err := l.start(ctx); err != nil {
		return err
	}
	opt := l.Options
	opt.Merge, opt.Queue = true, true
	turn, err := l.Runtime.Send(ctx, l.Session, message, opt)
	if err != nil {
		return err
	}
	go func() {
		res, err := turn.Wait(ctx)
		if err != nil && res.Status == "" && ctx.Err() == nil {
			select {
			case l.failed <- "⚠️ " + err.Error():
			default:
			}
		}
	}()
	return nil
}

// SendTo sends a message to a subagent's session: the person who sent
// it goes with it, the chat's model, limits and budget do not.
func (l *Local) SendTo(ctx context.Context, key, message string) error {
	_, err := l.Runtime.Send(ctx, key, message, ava.SendOptions{User: l.Options.User, Steer: true})
	return err
}

// Stop stops the session's request (and, by configuration, its
// subagents), or one subagent. A chat that has sent nothing yet has no
// session: nothing ran.
func (l *Local) Stop(ctx context.Context, key string) (bool, error) {
	if key == "" {
		stopped, err := l.Runtime.Stop(ctx, l.Session)
		if errors.Is(err, ava.ErrNotFound) {
			return false, nil
		}
		return stopped, err
	}
	return l.Runtime.Stop(ctx, key)
}

// Subagents lists the session's running subagents.
func (l *Local) Subagents(ctx context.Context) ([]ava.Subagent, error) {
	return l.Runtime.Subagents(ctx, ava.SubagentFilter{Parent: l.Session, Status: lifecycle.Active})
}

// Log reads the audit log: the session's history, or the trace of one of
// its subagents.
func (l *Local) Log(ctx context.Context, id string, n int) ([]string, error) {
	if id == "" {
		return l.Runtime.History(ctx, l.Session, n)
	}
	return l.Runtime.Trace(ctx, l.Session, id, n)
}

// Confirm answers a proposal of the session yes.
func (l *Local) Confirm(ctx context.Context, pendingID string) error {
	_, err := l.Runtime.Decide(ctx, l.Session, pendingID, ava.Confirmed, ava.Change{})
	return err
}

// Answer answers a subagent's question.
func (l *Local) Answer(_ context.Context, id, answer string) error {
	_, err := l.Runtime.Answer(l.Session, id, answer)
	return err
}

// Remote is a session on a daemon, reached through its HTTP API. A chat
// with no session yet gets a new one from the daemon with its first
// message; so does a chat under a key of its own that the daemon does
// not hold yet (session.CheckNewKey).
type Remote struct {
	Client *client.Client

	mu    sync.Mutex
	key   string
	named chan struct{} // closed once key is known
	// sent is closed once the daemon took a message of this chat (so
	// the session exists there).
	sent     chan struct{}
	sentOnce sync.Once
}

// NewRemote returns a daemon session: key, or a new one when key is "".
func NewRemote(c *client.Client, key string) *Remote {
	r := &Remote{Client: c, key: key, named: make(chan struct{}), sent: make(chan struct{})}
	if key != "" {
		close(r.named)
	}
	return r
}

// Key is the session key, "" until the daemon named a new session.
func (r *Remote) Key() string {
	select {
	case <-r.named:
		return r.key // set once, before named closed
	default:
		return ""
	}
}

// Follow reads the session's stream from the daemon, reconnecting
// where it stopped when the connection drops. It starts at the session's
// first event: a continued session's earlier conversation is replayed
// (as the panel replays it), then the stream goes on live.
func (r *Remote) Follow(ctx context.Context, emit func(event.Event)) error {
	select {
	case <-r.named:
	case <-ctx.Done():
		return nil
	}
	key := r.Key()
	after := uint64(0)
	for ctx.Err() == nil {
		s, err := r.Client.Stream(ctx, key, after)
		if err != nil {
			if r.notYet(err) {
				// A key of the chat's own that the daemon does not hold:
				// its first message creates the session, followed from
				// its start.
				select {
				case <-r.sent:
				case <-ctx.Done():
					return nil
				}
				after = 0
				continue
			}
			if !retryable(err) {
				return err
			}
			if !wait.Sleep(ctx, time.Second) {
				return nil
			}
			continue
		}
		after, err = readStream(s, after, emit)
		s.Close()
		if ctx.Err() == nil && err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			if !wait.Sleep(ctx, time.Second) {
				return nil
			}
		}
	}
	return nil
}

// notYet reports whether err says the session does not exist on the
// daemon while this chat has sent nothing to it yet.
func (r *Remote) notYet(err error) bool {
	select {
	case <-r.sent:
		return false
	default:
		return client.IsStatus(err, http.StatusNotFound)
	}
}

// retryable reports an error that a later try may not meet: no daemon
// (restarting), or one that answers 5xx (draining, starting).
func retryable(err error) bool {
	var apiErr *client.APIError
	return errors.Is(err, client.ErrNoDaemon) || errors.As(err, &apiErr) && apiErr.StatusCode >= 500
}

// readStream emits a stream's session events until it ends and returns
// the last sequence number seen.
func readStream(s *client.Stream, after uint64, emit func(event.Event)) (uint64, error) {
	for {
		ev, err := s.Next()
		if err != nil {
			return after, err
		}
		var e event.Event
		if json.Unmarshal(ev.Data, &e) != nil || e.Type == "" {
			continue // the daemon's own events (session, done)
		}
		if e.Seq > 0 {
			after = e.Seq
		}
		emit(e)
	}
}

// Send posts the message to POST /api/chat, queued behind a running
// request (the daemon merges it within its merge window), and reads only
// the stream's first event: the session's events arrive through Follow.
func (r *Remote) Send(ctx context.Context, message string) error {
	r.mu.Lock() // one first message names a new session
	defer r.mu.Unlock()
	key, err := r.post(ctx, client.ChatRequest{SessionKey: r.key, Message: message, Queue: true})
	if err != nil {
		return err
	}
	if r.key == "" {
		r.key = key
		close(r.named)
	}
	r.sentOnce.Do(func() { close(r.sent) })
	return nil
}

// SendTo sends a message to a subagent's session.
func (r *Remote) SendTo(ctx context.Context, key, message string) error {
	_, err := r.post(ctx, client.ChatRequest{SessionKey: key, Message: message, Steer: true})
	return err
}

// post sends a message with POST /api/chat and returns the session key
// from the stream's first event.
func (r *Remote) post(ctx context.Context, req client.ChatRequest) (string, error) {
	s, err := r.Client.Chat(ctx, req)
	if err != nil {
		return "", err
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil {
		return "", fmt.Errorf("chat: the daemon did not answer: %w", err)
	}
	var start client.ChatStart
	if ev.Type != client.EventSession || json.Unmarshal(ev.Data, &start) != nil {
		return "", fmt.Errorf("chat: unexpected first event %q from the daemon", ev.Type)
	}
	return start.SessionKey, nil
}

// Stop stops the session's request or a subagent.
func (r *Remote) Stop(ctx context.Context, key string) (bool, error) {
	if key == "" {
		if key = r.Key(); key == "" {
			return false, nil
		}
	}
	res, err := r.Client.Stop(ctx, key)
	if err != nil && key == r.Key() && r.notYet(err) {
		return false, nil // the chat's session is not on the daemon yet: nothing runs
	}
	return res.Stopped, err
}

// Subagents lists the session's running subagents.
func (r *Remote) Subagents(ctx context.Context) ([]ava.Subagent, error) {
	key := r.Key()
	if key == "" {
		return nil, nil
	}
	list, err := r.Client.Subagents(ctx, client.SubagentFilter{Parent: key, Status: []string{"active"}})
	if err != nil {
		return nil, err
	}
	out := make([]ava.Subagent, 0, len(list))
	for _, s := range list {
		out = append(out, terminal.FromClient(s))
	}
	return out, nil
}

// Log reads GET /api/logs.
func (r *Remote) Log(ctx context.Context, id string, n int) ([]string, error) {
	q := url.Values{"last": {strconv.Itoa(n)}}
	if id == "" {
		if q.Set("session", r.Key()); r.Key() == "" {
			return nil, nil
		}
	} else {
		q.Set("agent", id)
	}
	list, err := r.Client.Logs(ctx, q)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(list.Entries))
	for _, raw := range list.Entries {
		var e event.Event
		if err := json.Unmarshal(raw, &e); err != nil {
			continue
		}
		lines = append(lines, audit.FormatLine(e, audit.FormatOptions{}))
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// Confirm answers a proposal yes.
func (r *Remote) Confirm(ctx context.Context, pendingID string) error {
	_, err := r.Client.Confirm(ctx, pendingID, client.ConfirmRequest{Decision: "yes"})
	return err
}

// Answer answers a subagent's question (id "": the only one open).
func (r *Remote) Answer(ctx context.Context, id, answer string) error {
	key := r.Key()
	if id == "" {
		open, err := r.Client.Questions(ctx, key)
		if err != nil {
			return err
		}
		if len(open) != 1 {
			return fmt.Errorf("%d questions are open: name one (/answer Q-… text)", len(open))
		}
		id = open[0].ID
	}
	_, err := r.Client.Answer(ctx, id, client.AnswerRequest{Answer: answer, SessionKey: key})
	return err
}
