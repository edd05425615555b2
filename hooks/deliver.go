package hooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/avaagent/ava/hookspec"
)

// Headers of a webhook request.
const (
	// HeaderSignature is the signature: t=<unix seconds>,v1=<hex
	// HMAC-SHA256 of "<t>.<body>" with the hook's secret>.
	HeaderSignature = "X-Ava-Signature"
	// HeaderEvent names the event (subagent:complete, …).
	HeaderEvent = "X-Ava-Event"
	// HeaderDelivery is the delivery's ID: the same on every attempt,
	// so that a receiver can drop a repeat.
	HeaderDelivery = "X-Ava-Delivery"
)

// maxOutput bounds what is kept of a command's output or a webhook's
// answer, for the delivery's error.
const maxOutput = 2048

// Sign is the X-Ava-Signature value of body sent at t with secret.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// ErrBadSignature is a signature that does not match, or is too old.
var ErrBadSignature = errors.New("hook signature does not verify")

// Verify checks header (an X-Ava-Signature value) against body and
// secret as a receiver should: a v1 HMAC that matches, compared in
// constant time, made within tolerance of now (a replayed old request
// fails). It is what a receiver written in Go can call.
func Verify(header string, secret, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: header %q has no t= and v1=", ErrBadSignature, header)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: made %s ago, more than %s", ErrBadSignature, d.Round(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrBadSignature
}

// Attempt is one delivery to try: the hook, the event and its body.
type Attempt struct {
	Spec hookspec.Spec
	// ID is the delivery's ID (0 for a test).
	ID      int64
	Event   string
	Session string
	Body    []byte
}

// Sender delivers attempts: runs a command hook, posts a webhook.
type Sender struct {
	// Client posts webhooks; it must not follow redirects (a redirect
	// is a failure).
	Client *http.Client
	// Env is the environment of a command hook (the process's, without
	// Ava's secrets).
	Env []string
	// Getenv reads a webhook's secret (os.Getenv when nil).
	Getenv func(string) string
	// UserAgent is sent with each webhook.
	UserAgent string
	// Now is the clock of signatures (time.Now when nil).
	Now func() time.Time
}

// NewSender returns a Sender with a client that follows no redirect.
func NewSender(env []string, userAgent string) *Sender {
	return &Sender{Env: env, UserAgent: userAgent, Client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Send makes one attempt, within the hook's timeout: nil when the hook
// accepted the event (a command that exited 0, a 2xx answer).
func (s *Sender) Send(ctx context.Context, a Attempt) error {
	spec := a.Spec.WithDefaults()
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	if spec.Kind() == hookspec.KindURL {
		return s.post(ctx, spec, a)
	}
	return s.run(ctx, spec, a)
}

// run runs a command hook: the event JSON on stdin, its process group
// killed at the timeout.
func (s *Sender) run(ctx context.Context, spec hookspec.Spec, a Attempt) error {
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Stdin = bytes.NewReader(a.Body)
	out := &tail{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(append([]string(nil), s.Env...),
		"AVA_HOOK_EVENT="+a.Event, "AVA_HOOK_SESSION="+a.Session, "AVA_HOOK_DELIVERY="+strconv.FormatInt(a.ID, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("command %s: %w", spec.Command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("command %s: %w%s", spec.Command[0], err, out.suffix())
		}
		return nil
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("command %s: killed after %s (the hook's timeout)%s", spec.Command[0], spec.Timeout, out.suffix())
	}
}

// post sends a webhook: a POST of the event JSON, signed when the hook
// has a secret. Its errors name the hook by spec.Target() (scheme and
// host): they are stored as the delivery's last error and shown.
func (s *Sender) post(ctx context.Context, spec hookspec.Spec, a Attempt) error {
	shown := spec.Target()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, spec.URL, bytes.NewReader(a.Body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", shown, withoutURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.UserAgent)
	req.Header.Set(HeaderEvent, a.Event)
	req.Header.Set(HeaderDelivery, strconv.FormatInt(a.ID, 10))
	if spec.SecretEnv != "" {
		secret := s.getenv(spec.SecretEnv)
		if secret == "" {
			return fmt.Errorf("webhook %s: its secret_env %s is not set in this process", shown, spec.SecretEnv)
		}
		req.Header.Set(HeaderSignature, Sign([]byte(secret), s.now(), a.Body))
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("webhook %s: no answer within %s (the hook's timeout)", shown, spec.Timeout)
		}
		return fmt.Errorf("webhook %s: %w", shown, withoutURL(err))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: answered %s: %s", shown, resp.Status, strings.TrimSpace(string(answer)))
	}
	return nil
}

// withoutURL is err without the request's URL: net/http's errors are a
// *url.Error that quotes the whole URL ("Post \"https://…/secret\": …");
// its Op and cause are kept.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func (s *Sender) getenv(k string) string {
	if s.Getenv != nil {
		return s.Getenv(k)
	}
	return os.Getenv(k)
}

func (s *Sender) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// suffix is the kept output as an error's end ("" when none).
func (t *tail) suffix() string {
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return ": " + s
}
