package storetest

import (
	"testing"

	"github.com/avaagent/ava/store"
)

func channelCases() []testCase {
	return []testCase{{"ChannelUpdates", testChannelUpdates}, {"ChannelRefusals", testChannelRefusals}}
}

// A channel's updates are stored once, listed until handled, and say
// where to resume.
func testChannelUpdates(t *testing.T, s store.Store) {
	next, err := s.NextUpdate(ctx(t), "telegram")
	must(t, err)
	if next != 0 {
		t.Fatalf("next update of an empty channel: %d", next)
	}
	ups := []store.ChannelUpdate{{ID: 10, ChatID: 1, Payload: []byte(`{"update_id":10}`)},
		{ID: 11, ChatID: 2, Payload: []byte(`{"update_id":11}`)}}
	fresh, err := s.SaveUpdates(ctx(t), "telegram", ups)
	must(t, err)
	if len(fresh) != 2 {
		t.Fatalf("first save: %d new", len(fresh))
	}
	fresh, err = s.SaveUpdates(ctx(t), "telegram", append(ups[1:], store.ChannelUpdate{ID: 12, ChatID: 1, Payload: []byte(`{}`)}))
	must(t, err)
	if len(fresh) != 1 || fresh[0].ID != 12 {
		t.Fatalf("second save: new %+v, want only 12", fresh)
	}
	must(t, s.UpdateHandled(ctx(t), "telegram", 10))
	wantErr(t, s.UpdateHandled(ctx(t), "telegram", 99), store.ErrNotFound)
	pending, err := s.PendingUpdates(ctx(t), "telegram")
	must(t, err)
	if len(pending) != 2 || pending[0].ID != 11 || pending[1].ID != 12 || string(pending[0].Payload) != `{"update_id":11}` {
		t.Fatalf("pending %+v", pending)
	}
	if next, _ = s.NextUpdate(ctx(t), "telegram"); next != 13 {
		t.Fatalf("next update %d, want 13", next)
	}
	if other, _ := s.PendingUpdates(ctx(t), "other"); len(other) != 0 {
		t.Fatalf("another channel sees %+v", other)
	}
}

// A refused chat is recorded once a day.
func testChannelRefusals(t *testing.T, s store.Store) {
	for i, want := range []bool{true, false} {
		first, err := s.FirstRefusal(ctx(t), "telegram", 42, "2026-11-23")
		must(t, err)
		if first != want {
			t.Fatalf("refusal %d: first = %v", i+1, first)
		}
	}
	if first, _ := s.FirstRefusal(ctx(t), "telegram", 42, "2026-11-24"); !first {
		t.Fatal("the next day's refusal is not the first")
	}
	key, err := s.ChatSession(ctx(t), "telegram", 42)
	must(t, err)
	if key != "" {
		t.Fatalf("a chat never moved has session %q", key)
	}
	for _, want := range []string{"ava:telegram:42:1", "ava:telegram:42:2"} {
		must(t, s.SetChatSession(ctx(t), "telegram", 42, want))
		if key, _ = s.ChatSession(ctx(t), "telegram", 42); key != want {
			t.Fatalf("chat session %q, want %q", key, want)
		}
	}
}
