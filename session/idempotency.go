package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/avaagent/ava/store"
)

// A person's message sent with an idempotency key (SendOptions.
// IdempotencyKey, POST /api/chat's Idempotency-Key) is sent once:
//
//   - its key is recorded in the transaction that stores the message when
//     its turn starts (orchestrator.Message.Idempotency), so the two land
//     together or not at all;
//   - while its turn waits, runs, and for keyedRetain after it ended, the
//     turn is kept here under its key: a repeat (SendOnce) gets the same
//     turn, and of concurrent repeats exactly one starts a turn (Send
//     registers the key under the service's lock);
//   - once the key is recorded and the turn is no longer kept here (it
//     ended long ago, before a restart, or runs in another process), a
//     repeat is answered Repeated without a turn;
//   - two processes taking the same key at the same moment both start a
//     turn, and the store refuses the second one's message: that turn
//     ends at once, with an error wrapping store.ErrKeyUsed, before it
//     asks the model.
//
// The same key with another message or other options is ErrKeyReused.

// ErrKeyReused: an idempotency key came again with a different request
// (another message or other options). Nothing was sent.
var ErrKeyReused = errors.New("this idempotency key was used for a different request: use a new key for a new request")

// keyedRetain is how long a keyed turn is kept here after it ended, for
// a repeat to get its stream and its result.
const keyedRetain = 10 * time.Minute

// keyed is a turn sent with an idempotency key, kept for its repeats.
type keyed struct {
	t     *Turn
	ended time.Time // when a sweep first saw it done
}

// Repeat is SendOnce's answer to a message whose key came before.
type Repeat struct {
	// Turn is the first message's turn when this process still keeps it
	// (waiting, running, or ended less than 10 minutes ago); nil when
	// the key is recorded in the store only.
	Turn *Turn
	// Session is the session the first message went to.
	Session string
	// RecordedAt is when the key was recorded (zero when Turn is set and
	// the message is not stored yet).
	RecordedAt time.Time
}

// SendOnce is Send for a message with SendOptions.IdempotencyKey set: a
// message whose key came before is not sent again, and the answer is a
// Repeat of the first; otherwise it is Send. A key on a subagent's
// session is refused (its follow-ups are not stored as messages).
func (s *Service) SendOnce(ctx context.Context, key, message string, opt SendOptions) (*Turn, *Repeat, error) {
	if opt.IdempotencyKey == "" {
		t, err := s.Send(ctx, key, message, opt)
		return t, nil, err
	}
	k, err := messageKey(key, message, opt)
	if err != nil {
		return nil, nil, err
	}
	for range 2 {
		if rep, err := s.repeat(ctx, k); rep != nil || err != nil {
			return nil, rep, err
		}
		t, err := s.Send(ctx, key, message, opt)
		if errors.Is(err, store.ErrKeyUsed) {
			continue // a concurrent Send with the key won: it is ours to repeat
		}
		return t, nil, err
	}
	return nil, nil, fmt.Errorf("send to %s: idempotency key %q: taken and released at once; send again", key, k.Key)
}

// repeat finds the first message sent under k's key: a turn kept here,
// or the key recorded in the store. Neither: nil, nil.
func (s *Service) repeat(ctx context.Context, k *store.Idempotency) (*Repeat, error) {
	s.mu.Lock()
	e := s.keyed[k.Key]
	s.mu.Unlock()
	if e != nil {
		if e.t.key.RequestHash != k.RequestHash {
			return nil, fmt.Errorf("idempotency key %q (sent to %s): %w", k.Key, e.t.Session, ErrKeyReused)
		}
		return &Repeat{Turn: e.t, Session: e.t.Session}, nil
	}
	if s.cfg.Store == nil {
		return nil, nil
	}
	got, err := s.cfg.Store.GetIdempotency(ctx, k.Scope, k.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("send: look up the idempotency key: %w", err)
	}
	if got.RequestHash != k.RequestHash {
		return nil, fmt.Errorf("idempotency key %q (first used %s for %s): %w", k.Key,
			got.CreatedAt.Format(time.RFC3339), got.Result, ErrKeyReused)
	}
	return &Repeat{Session: got.Result, RecordedAt: got.CreatedAt}, nil
}

// keepKeyedLocked registers t under its key, or fails with an error
// wrapping store.ErrKeyUsed when a turn kept here holds the key; it
// drops the kept turns that ended more than keyedRetain ago (caller
// holds s.mu).
func (s *Service) keepKeyedLocked(t *Turn) error {
	if t.key == nil {
		return nil
	}
	now := time.Now()
	for k, e := range s.keyed {
		select {
		case <-e.t.done:
			if e.ended.IsZero() {
				e.ended = now
			} else if now.Sub(e.ended) > keyedRetain {
				delete(s.keyed, k)
			}
		default:
		}
	}
	if s.keyed[t.key.Key] != nil {
		return fmt.Errorf("send to %s: idempotency key %q: %w", t.Session, t.key.Key, store.ErrKeyUsed)
	}
	s.keyed[t.key.Key] = &keyed{t: t}
	return nil
}

// dropKeyedLocked forgets t's key: Send refused the message after all
// (caller holds s.mu).
func (s *Service) dropKeyedLocked(t *Turn) {
	if t.key != nil && s.keyed[t.key.Key] != nil && s.keyed[t.key.Key].t == t {
		delete(s.keyed, t.key.Key)
	}
}

// messageKey is a message's idempotency key as the store records it
// (nil without one): the key, and a hash of the session, the message
// and the options that change what is sent.
func messageKey(session, message string, opt SendOptions) (*store.Idempotency, error) {
	if opt.IdempotencyKey == "" {
		return nil, nil
	}
	if IsSubagentKey(session) {
		return nil, fmt.Errorf("send to %s: an idempotency key is for a message to a main session; a subagent's follow-up does not take one", session)
	}
	content := struct {
		Session, Message, Model, User string
		Queue, Supersede, Merge       bool
	}{session, message, opt.Model, opt.User, opt.Queue, opt.Supersede, opt.Merge}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("send: hash the message: %w", err)
	}
	sum := sha256.Sum256(b)
	return &store.Idempotency{Scope: store.IdempotencyChat, Key: opt.IdempotencyKey, RequestHash: hex.EncodeToString(sum[:])}, nil
}

// From is the session's last event number when the turn's message was
// sent (SendOptions.From): its events, and a repeat's stream, follow it.
func (t *Turn) From() uint64 { return t.opt.From }
