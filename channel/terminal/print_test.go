package terminal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/channel/terminal"
	"github.com/avaagent/ava/event"
)

// TestPrintTurnStopsAtTheLastEvent: a follower's stream never closes, so
// PrintTurn prints on until the caller names the session's last event,
// then prints everything up to it (also what was published before) and
// returns.
func TestPrintTurnStopsAtTheLastEvent(t *testing.T) {
	const key = "ava:cli:print"
	hub := event.NewHub(event.NewMemoryLog())
	sub := hub.Follow(key, 0)
	defer sub.Close()
	publish := func(typ event.Type, content any) uint64 {
		ev := event.New(typ, content)
		ev.Session, ev.Agent = key, event.OrchestratorID
		out, err := hub.Publish(ev)
		if err != nil {
			t.Fatal(err)
		}
		return out.Seq
	}
	var stdout, stderr strings.Builder
	until := make(chan uint64, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		terminal.PrintTurn(context.Background(), sub, until, &stdout, &stderr, false)
	}()
	publish(event.ToolCall, event.ToolCallContent{Name: "read_file", Args: []byte(`{}`)})
	last := publish(event.AssistantMessage, event.TextContent{Text: "the answer"})
	select {
	case <-done:
		t.Fatal("PrintTurn returned before it was told the last event")
	case <-time.After(100 * time.Millisecond):
	}
	until <- last
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("PrintTurn did not return after the last event")
	}
	if stdout.String() != "the answer\n" || !strings.Contains(stderr.String(), "[tool] read_file") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// TestPrintTurnClosedUntil: a closed until stops it at once.
func TestPrintTurnClosedUntil(t *testing.T) {
	hub := event.NewHub(event.NewMemoryLog())
	sub := hub.Follow("ava:cli:closed", 0)
	defer sub.Close()
	until := make(chan uint64)
	close(until)
	done := make(chan struct{})
	go func() {
		defer close(done)
		terminal.PrintTurn(context.Background(), sub, until, &strings.Builder{}, &strings.Builder{}, false)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("PrintTurn did not return")
	}
}
