// Package hookspec is what a lifecycle hook is to Ava's configuration:
// the definition config.yaml's hooks and a data-root role's hooks decode
// into (Spec), the names of the events a hook can hear, and the hook's
// identity. It is a leaf: config and the role loader read it without
// importing package hooks, which records and delivers what it describes.
package hookspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/avaagent/ava/redact"
)

// Event names a hook can hear: the seed 002 lifecycle entry types of a
// subagent, and the session's, proposal's and question's.
const (
	SubagentQueued   = "subagent:queued"
	SubagentStart    = "subagent:start"
	SubagentResumed  = "subagent:resumed"
	SubagentComplete = "subagent:complete"
	SubagentError    = "subagent:error"
	SubagentAborted  = "subagent:aborted"
	SessionIdle      = "session:idle"
	Proposal         = "proposal"
	Question         = "question"
)

// Events are every event name, in the order the docs list them.
var Events = []string{SubagentQueued, SubagentStart, SubagentResumed, SubagentComplete, SubagentError,
	SubagentAborted, SessionIdle, Proposal, Question}

// Known reports whether name is an event a hook can hear.
func Known(name string) bool { return slices.Contains(Events, name) }

// Defaults of a hook's delivery.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultAttempts = 8
	DefaultBackoff  = 10 * time.Second
	// MaxBackoff caps the wait between two attempts.
	MaxBackoff = time.Hour
	// MaxTimeout and MaxAttempts bound what a hook may ask for.
	MaxTimeout  = 5 * time.Minute
	MaxAttempts = 50
)

// Spec is one hook: the events it hears and either a command (run with
// the person's rights, the event JSON on stdin) or a URL (a POST of the
// event JSON, signed with the secret in the environment variable
// SecretEnv when set).
type Spec struct {
	Events  []string `yaml:"events" json:"events"`
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	URL     string   `yaml:"url,omitempty" json:"url,omitempty"`
	// SecretEnv names the environment variable holding the webhook's
	// signing secret (X-Ava-Signature); the config never holds it.
	SecretEnv string `yaml:"secret_env,omitempty" json:"secret_env,omitempty"`
	// Timeout bounds one attempt (default DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Attempts is how many times a delivery is tried before it is
	// dead-lettered (default DefaultAttempts).
	Attempts int `yaml:"attempts,omitempty" json:"attempts,omitempty"`
	// Backoff is the wait before the first retry, doubled after each
	// failure up to MaxBackoff (default DefaultBackoff).
	Backoff time.Duration `yaml:"backoff,omitempty" json:"backoff,omitempty"`
}

// Kinds of hook.
const (
	KindCommand = "command"
	KindURL     = "url"
)

// Kind is KindCommand or KindURL.
func (s Spec) Kind() string {
	if s.URL != "" {
		return KindURL
	}
	return KindCommand
}

// ID names the hook by what it reaches (its command or its URL and
// secret's variable), not by its events, so that adding an event to a
// hook keeps its deliveries: "h-" and 12 hex characters. Two hooks that
// reach the same target are one hook for delivery (one delivery per
// event), in every process that has them.
func (s Spec) ID() string {
	b, _ := json.Marshal(struct {
		Command   []string `json:"c,omitempty"`
		URL       string   `json:"u,omitempty"`
		SecretEnv string   `json:"s,omitempty"`
	}{s.Command, s.URL, s.SecretEnv})
	sum := sha256.Sum256(b)
	return "h-" + hex.EncodeToString(sum[:6])
}

// Target is the hook's target as shown to the person: the command
// line, or the URL's scheme and host only (redact.URL: a webhook's path
// and query are often its credential). Every surface, error and log line
// that names a hook shows this, never URL itself; the URL stays in the
// configuration where the person wrote it, and only the request is made
// with it.
func (s Spec) Target() string {
	if s.URL != "" {
		return redact.URL(s.URL)
	}
	return strings.Join(s.Command, " ")
}

// Hears reports whether the hook hears the event named name.
func (s Spec) Hears(name string) bool { return slices.Contains(s.Events, name) }

// WithDefaults fills the zero delivery settings with their defaults.
func (s Spec) WithDefaults() Spec {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Attempts <= 0 {
		s.Attempts = DefaultAttempts
	}
	if s.Backoff <= 0 {
		s.Backoff = DefaultBackoff
	}
	return s
}

// Validate reports what is wrong with the hook: an empty or unknown
// event, neither or both of command and url, a relative command, a URL
// that is not http(s), a secret variable that is not set (getenv is
// os.Getenv when nil), or delivery settings out of bounds.
func (s Spec) Validate(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	if len(s.Events) == 0 {
		return errors.New("hook: events is empty; name one or more of " + strings.Join(Events, ", "))
	}
	for _, e := range s.Events {
		if !Known(e) {
			return fmt.Errorf("hook: unknown event %q; known: %s", e, strings.Join(Events, ", "))
		}
	}
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return errors.New("hook: has both command and url; a hook is one or the other")
	case len(s.Command) == 0 && s.URL == "":
		return errors.New("hook: needs a command (a list: the program and its arguments) or a url")
	case len(s.Command) > 0:
		if err := checkCommand(s); err != nil {
			return err
		}
	default:
		if err := checkURL(s, getenv); err != nil {
			return err
		}
	}
	return checkDelivery(s)
}

func checkCommand(s Spec) error {
	if !strings.HasPrefix(s.Command[0], "/") {
		return fmt.Errorf("hook: command %q must be an absolute path (hooks do not search PATH)", s.Command[0])
	}
	if s.SecretEnv != "" {
		return errors.New("hook: secret_env signs webhooks; a command hook has none")
	}
	return nil
}

func checkURL(s Spec, getenv func(string) string) error {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Named by its scheme and host only, as everywhere: the error
		// reaches logs and the API (a reload's).
		return fmt.Errorf("hook: url %s is not an http or https URL with a host", redact.URL(s.URL))
	}
	if u.User != nil {
		return fmt.Errorf("hook: url of %s holds credentials; sign with secret_env instead", u.Host)
	}
	if s.SecretEnv != "" && getenv(s.SecretEnv) == "" {
		return fmt.Errorf("hook: secret_env %s is not set in the environment (the webhook to %s is signed with it)", s.SecretEnv, u.Host)
	}
	return nil
}

func checkDelivery(s Spec) error {
	switch {
	case s.Timeout < 0 || s.Timeout > MaxTimeout:
		return fmt.Errorf("hook: timeout %s is out of range (up to %s)", s.Timeout, MaxTimeout)
	case s.Attempts < 0 || s.Attempts > MaxAttempts:
		return fmt.Errorf("hook: attempts %d is out of range (1 to %d)", s.Attempts, MaxAttempts)
	case s.Backoff < 0 || s.Backoff > MaxBackoff:
		return fmt.Errorf("hook: backoff %s is out of range (up to %s)", s.Backoff, MaxBackoff)
	}
	return nil
}

// Delay is the wait before attempt number next (2 for the first retry):
// Backoff doubled per earlier retry, capped at MaxBackoff.
func (s Spec) Delay(next int) time.Duration {
	d := s.WithDefaults().Backoff
	for i := 2; i < next && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}
