// Package telegram is Ava's Telegram channel: each allowed chat talks to
// its own main session (ava:telegram:<chat id>) through the Bot API.
//
// Updates arrive by long polling (or a webhook, with Telegram's secret
// header checked) and are stored before they are acknowledged, so a
// restart neither loses one nor handles one twice: an update is marked
// handled once a command is answered or a message handed to its session;
// one a crash cut short of that is handled again at the next start.
// Updates reach the sessions in order per chat, chats concurrently; a
// message's answer streams in the background, after the chat's earlier
// answers, so that the next message can be merged into a request that
// has just started (the session's merge window). Answers stream by
// editing one message (at most
// once per EditInterval), then the final text, split at Telegram's size
// limit on paragraph or line boundaries and sent as plain text, so no
// model output can make a send fail. The Bot API's 429s are waited out
// (retry_after) and every call is rate limited; an outage or a revoked
// token is logged and retried with backoff and never stops the daemon.
package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"golang.org/x/time/rate"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/internal/wait"
)

// DefaultAPIURL is the public Bot API.
const DefaultAPIURL = "https://api.telegram.org"

// ChannelName is the channel's name in the store.
const ChannelName = "telegram"

// Config is what the channel needs.
type Config struct {
	// Token is the bot's token (TELEGRAM_BOT_TOKEN).
	Token string
	// APIURL is the Bot API's base URL (AVA_TELEGRAM_API_URL).
	APIURL string
	// Allowed lists the chat and user IDs served (AVA_TELEGRAM_ALLOWED);
	// empty serves nobody.
	Allowed []int64
	// WebhookSecret, when set, switches to webhook mode: updates come to
	// WebhookHandler with this secret in their header; no polling.
	WebhookSecret string
	// Runtime is the application core every chat goes through: its
	// sessions, subagents, proposals, questions, logs and the channel's
	// stored updates (Runtime.ChannelUpdates).
	Runtime *ava.Runtime
	Logger  *slog.Logger
	// PollTimeout is the long-poll timeout (default 30 s).
	PollTimeout time.Duration
	// EditInterval is the least time between two edits of a streamed
	// answer (default 1 s).
	EditInterval time.Duration
	// StatusInterval is the least time between two edits of one
	// subagent's status line (default 2 s; Telegram throttles a bot that
	// edits a message more often).
	StatusInterval time.Duration
	// TypingInterval is how often the typing action is renewed while the
	// chat's session works (default 4 s; Telegram shows it for 5 s).
	TypingInterval time.Duration
	// ChatInterval paces the calls to one chat (default 1 s, with a burst
	// of 3): Telegram allows about one message a second per chat.
	ChatInterval time.Duration
	// HTTPClient makes the Bot API calls (default: one with no timeout
	// beyond the requests' contexts).
	HTTPClient *http.Client
}

// Channel is a running Telegram channel.
type Channel struct {
	cfg Config
	log *slog.Logger
	bot *bot.Bot
	// allowed are the chat and user IDs served: a snapshot SetAllowed
	// swaps (the daemon's reload).
	allowed atomic.Pointer[map[int64]bool]
	global  *rate.Limiter

	rt      *ava.Runtime
	updates ava.ChannelStore

	mu     sync.Mutex
	chats  map[int64]*chat
	lines  statusLines     // the subagents' status lines (under their own lock)
	runCtx context.Context // Run's context, for webhook updates (guarded by mu)
	wg     sync.WaitGroup
}

// New checks the configuration and returns a channel; Run starts it.
func New(cfg Config) (*Channel, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("telegram: no bot token (TELEGRAM_BOT_TOKEN)")
	}
	if cfg.Runtime == nil {
		return nil, errors.New("telegram: the channel needs the runtime")
	}
	cfg.APIURL = strings.TrimRight(cmpOr(cfg.APIURL, DefaultAPIURL), "/")
	cfg.PollTimeout = cmpOr(cfg.PollTimeout, 30*time.Second)
	cfg.EditInterval = cmpOr(cfg.EditInterval, time.Second)
	cfg.StatusInterval = cmpOr(cfg.StatusInterval, 2*time.Second)
	cfg.TypingInterval = cmpOr(cfg.TypingInterval, 4*time.Second)
	cfg.ChatInterval = cmpOr(cfg.ChatInterval, time.Second)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b, err := bot.New(cfg.Token, bot.WithSkipGetMe(), bot.WithServerURL(cfg.APIURL),
		bot.WithHTTPClient(cfg.PollTimeout+10*time.Second, cfg.HTTPClient))
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	c := &Channel{cfg: cfg, log: cfg.Logger.With("channel", ChannelName), bot: b,
		rt: cfg.Runtime, updates: cfg.Runtime.ChannelUpdates(),
		global: rate.NewLimiter(rate.Limit(25), 5), chats: map[int64]*chat{}}
	c.SetAllowed(cfg.Allowed)
	return c, nil
}

// SetAllowed replaces the chat and user IDs the channel serves (the
// daemon's reload of AVA_TELEGRAM_ALLOWED / telegram_allowed); the next
// message is judged by them.
func (c *Channel) SetAllowed(ids []int64) {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	c.allowed.Store(&m)
}

// allows reports whether the chat or user ID is served.
func (c *Channel) allows(id int64) bool { return (*c.allowed.Load())[id] }

// ParseAllowed turns AVA_TELEGRAM_ALLOWED's comma-separated IDs into
// numbers, naming any that is not one.
func ParseAllowed(ids []string) ([]int64, error) {
	var out []int64
	for _, s := range ids {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("AVA_TELEGRAM_ALLOWED: %q is not a chat or user ID (a number)", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Describe says in one line how the channel runs, for the daemon's
// start-up message.
func (c *Channel) Describe() string {
	mode := "long polling"
	if c.cfg.WebhookSecret != "" {
		mode = "webhook (POST /telegram/webhook)"
	}
	allowed := *c.allowed.Load()
	if len(allowed) == 0 {
		return "Telegram: " + mode + "; AVA_TELEGRAM_ALLOWED is empty, so nobody is allowed: every chat gets a refusal"
	}
	ids := make([]string, 0, len(allowed))
	for id := range allowed {
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	slices.Sort(ids)
	return "Telegram: " + mode + "; serving chats and users " + strings.Join(ids, ", ")
}

// Run handles the updates left pending by a previous run, then polls (or,
// in webhook mode, waits) until ctx is done, and waits for the chats'
// work to end.
func (c *Channel) Run(ctx context.Context) error {
	defer c.wg.Wait()
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
	// Reports Ava makes by itself go to their chats (on_complete).
	defer c.rt.Observe(ava.Observer{TurnEnded: c.reported})()
	pending, err := c.updates.PendingUpdates(ctx, ChannelName)
	if err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	for _, u := range pending {
		c.dispatch(ctx, u)
	}
	if c.cfg.WebhookSecret != "" {
		<-ctx.Done()
		return nil
	}
	c.poll(ctx)
	return nil
}

// poll long-polls getUpdates, storing each batch before acknowledging it
// (the next call's offset), with backoff on errors.
func (c *Channel) poll(ctx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		if backoff > 0 && !wait.Sleep(ctx, backoff) {
			return
		}
		next, err := c.updates.NextUpdate(ctx, ChannelName)
		if err == nil {
			err = c.pollOnce(ctx, next)
		}
		if err == nil {
			backoff = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, time.Second), time.Minute)
		var tooMany *bot.TooManyRequestsError
		if errors.As(err, &tooMany) {
			backoff = time.Duration(tooMany.RetryAfter) * time.Second
		}
		c.log.Warn("telegram: getting updates failed; retrying", "in", backoff, "err", err)
	}
}

// pollOnce makes one getUpdates call from offset and hands on what is new.
func (c *Channel) pollOnce(ctx context.Context, offset int64) error {
	raws, err := c.getUpdates(ctx, offset)
	if err != nil {
		return err
	}
	fresh, err := c.save(ctx, raws)
	if err != nil {
		return err
	}
	for _, u := range fresh {
		c.dispatch(ctx, u)
	}
	return nil
}

// save stores updates as received and returns the new ones.
func (c *Channel) save(ctx context.Context, raws []json.RawMessage) ([]ava.ChannelUpdate, error) {
	if len(raws) == 0 {
		return nil, nil
	}
	rows := make([]ava.ChannelUpdate, 0, len(raws))
	for _, raw := range raws {
		u, err := decodeUpdate(raw)
		if err != nil {
			return nil, err
		}
		rows = append(rows, ava.ChannelUpdate{ID: u.ID, ChatID: chatOf(u), Payload: raw})
	}
	return c.updates.SaveUpdates(ctx, ChannelName, rows)
}

// decodeUpdate reads one update of the Bot API.
func decodeUpdate(raw []byte) (*models.Update, error) {
	var u models.Update
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("decode update: %w", err)
	}
	if u.ID == 0 {
		return nil, errors.New("decode update: no update_id")
	}
	return &u, nil
}

// getUpdates is the Bot API's getUpdates, called directly so that an
// update is acknowledged (by the next call's offset) only once stored.
func (c *Channel) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"offset": offset, "timeout": int(c.cfg.PollTimeout.Seconds()),
		"allowed_updates": []string{"message", "callback_query"}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.APIURL+"/bot"+c.cfg.Token+"/getUpdates",
		strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", scrubToken(err, c.cfg.Token))
	}
	defer resp.Body.Close()
	var out struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("getUpdates: HTTP %d, %w", resp.StatusCode, err)
	}
	switch {
	case out.OK:
		return out.Result, nil
	case out.ErrorCode == http.StatusTooManyRequests:
		return nil, &bot.TooManyRequestsError{Message: out.Description, RetryAfter: out.Parameters.RetryAfter}
	case out.ErrorCode == http.StatusUnauthorized:
		return nil, fmt.Errorf("getUpdates: the bot token was refused (revoked?): %s", out.Description)
	}
	return nil, fmt.Errorf("getUpdates: %d %s", out.ErrorCode, out.Description)
}

// Webhook is the route of webhook mode (POST /telegram/webhook), for the
// daemon to serve outside its token rule; ok is false in polling mode.
func (c *Channel) Webhook() (pattern string, h http.Handler, ok bool) {
	if c.cfg.WebhookSecret == "" {
		return "", nil, false
	}
	return "POST /telegram/webhook", c.WebhookHandler(), true
}

// WebhookHandler receives updates in webhook mode: a request without the
// configured secret token header is refused (401); an update is stored
// before the 200 that acknowledges it.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if c.cfg.WebhookSecret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.cfg.WebhookSecret)) != 1 {
			c.log.Warn("telegram: webhook call without the secret token refused", "remote", r.RemoteAddr)
			http.Error(w, `{"error":"wrong or missing secret token"}`, http.StatusUnauthorized)
			return
		}
		c.mu.Lock()
		runCtx := c.runCtx
		c.mu.Unlock()
		if runCtx == nil || runCtx.Err() != nil {
			http.Error(w, `{"error":"the Telegram channel is not running"}`, http.StatusServiceUnavailable)
			return
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			_, err = decodeUpdate(raw)
		}
		if err != nil {
			http.Error(w, `{"error":"the body is not an update"}`, http.StatusBadRequest)
			return
		}
		fresh, err := c.save(r.Context(), []json.RawMessage{raw})
		if err != nil {
			c.log.Error("telegram: storing a webhook update failed", "err", err)
			http.Error(w, `{"error":"could not store the update"}`, http.StatusServiceUnavailable)
			return
		}
		for _, f := range fresh {
			c.dispatch(runCtx, f)
		}
		w.WriteHeader(http.StatusOK)
	})
}

// chatOf is the chat an update belongs to (0 when none).
func chatOf(u *models.Update) int64 {
	switch {
	case u.Message != nil:
		return u.Message.Chat.ID
	case u.CallbackQuery != nil:
		return callbackChat(u.CallbackQuery)
	}
	return 0
}

// callbackChat is the chat of the message a button was on (one too old
// to read is "inaccessible" but still names its chat), else the presser's
// private chat.
func callbackChat(q *models.CallbackQuery) int64 {
	switch {
	case q.Message.Message != nil:
		return q.Message.Message.Chat.ID
	case q.Message.InaccessibleMessage != nil:
		return q.Message.InaccessibleMessage.Chat.ID
	}
	return q.From.ID
}

// scrubToken keeps the token out of an HTTP error (its URL holds it).
func scrubToken(err error, token string) error {
	return errors.New(strings.ReplaceAll(err.Error(), token, "<token>"))
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
