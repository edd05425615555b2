package event_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/redact"
)

const (
	ghToken = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	pem     = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----"
)

// recordingSink keeps what it is given.
type recordingSink struct {
	mu  sync.Mutex
	evs []event.Event
}

func (s *recordingSink) Deliver(ev event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return nil
}

// TestHubMasksWhatItStoresDeliversAndStreams publishes a secret in a
// kept event and, cut into small pieces, in streamed text: the Log, the
// sink and a live subscriber see it masked, and the streamed pieces put
// together are the masked text.
func TestHubMasksWhatItStoresDeliversAndStreams(t *testing.T) {
	log, sink := event.NewMemoryLog(), &recordingSink{}
	h := event.NewHub(log, sink)
	h.SetRedactor(redact.New(redact.Options{Environ: []string{"MY_SERVICE_PASS=opensesame99"}}))
	const session = "ava:cli:redact"
	sub := h.Subscribe(session, 0)
	defer sub.Close()

	answer := "token " + ghToken + " and key\n" + pem + "\npassword: hunter22 and opensesame99 done"
	for i := 0; i < len(answer); i += 5 {
		if _, err := h.Publish(event.Event{Session: session, Agent: "ava", Type: event.TextDelta,
			Content: event.New(event.TextDelta, event.TextContent{Text: answer[i:min(i+5, len(answer))]}).Content}); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := h.Publish(event.Event{Session: session, Agent: "ava", Type: event.AssistantMessage,
		Content: event.New(event.AssistantMessage, event.TextContent{Text: answer}).Content})
	if err != nil {
		t.Fatal(err)
	}

	live := readAll(t, sub, kept.Seq)
	var streamed strings.Builder
	for _, ev := range live {
		if ev.Type == event.TextDelta {
			var c event.TextContent
			if err := ev.Decode(&c); err != nil {
				t.Fatal(err)
			}
			streamed.WriteString(c.Text)
		}
	}
	stored, err := log.ReadEvents(context.Background(), session, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "token [REDACTED] and key\n[REDACTED]\npassword: [REDACTED] and [REDACTED] done"
	if streamed.String() != want {
		t.Errorf("streamed text\n got %q\nwant %q", streamed.String(), want)
	}
	for where, evs := range map[string][]event.Event{"live": live, "log": stored, "sink": sink.evs} {
		for _, ev := range evs {
			for _, secret := range []string{"ghp_16C7", "MIIEowIBAAKCAQEA", "hunter22", "opensesame99"} {
				if strings.Contains(string(ev.Content), secret) {
					t.Errorf("%s: %s #%d holds %q: %s", where, ev.Type, ev.Seq, secret, ev.Content)
				}
			}
		}
	}
	if len(stored) != 1 || !strings.Contains(string(stored[0].Content), "password: [REDACTED]") {
		t.Errorf("stored %+v", stored)
	}
}

// TestHeldThinkingComesBeforeTheAnswer checks that text held back from
// one stream (thinking) is released before the next stream (the answer)
// starts, and the answer before the kept event that follows.
func TestHeldThinkingComesBeforeTheAnswer(t *testing.T) {
	h := event.NewHub(nil)
	h.SetRedactor(redact.New(redact.Options{}))
	const session = "ava:cli:order"
	sub := h.Subscribe(session, 0)
	defer sub.Close()
	publish := func(typ event.Type, text string) event.Event {
		t.Helper()
		ev, err := h.Publish(event.Event{Session: session, Agent: "ava", Type: typ,
			Content: event.New(typ, event.TextContent{Text: text}).Content})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	publish(event.ThinkingDelta, "I think ab")
	publish(event.ThinkingDelta, "out it")
	publish(event.TextDelta, "The answer")
	publish(event.TextDelta, " is 42")
	kept := publish(event.AssistantMessage, "The answer is 42")
	var got []string
	for _, ev := range readAll(t, sub, kept.Seq) {
		var c event.TextContent
		if err := ev.Decode(&c); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Type)+":"+c.Text)
	}
	want := "ThinkingDelta:I think |ThinkingDelta:about |ThinkingDelta:it|TextDelta:The |TextDelta:answer is |TextDelta:42|AssistantMessage:The answer is 42"
	if strings.Join(got, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
}
