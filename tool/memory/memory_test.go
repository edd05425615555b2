package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/tooltest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeStore keeps memories in a slice. SearchMemory matches every word of
// the query against content and tags, case-insensitively.
type fakeStore struct {
	mu    sync.Mutex
	mems  []Memory
	err   error
	block bool // wait for ctx instead of answering
}

func (s *fakeStore) WriteMemory(ctx context.Context, m Memory) (Memory, error) {
	if err := s.fail(ctx); err != nil {
		return Memory{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m.ID = int64(len(s.mems) + 1)
	s.mems = append(s.mems, m)
	return m, nil
}

func (s *fakeStore) SearchMemory(ctx context.Context, query string, limit int) ([]Memory, error) {
	if err := s.fail(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Memory
	for i := len(s.mems) - 1; i >= 0 && len(out) < limit; i-- {
		m := s.mems[i]
		text := strings.ToLower(m.Content + " " + strings.Join(m.Tags, " "))
		all := true
		for _, w := range strings.Fields(strings.ToLower(query)) {
			all = all && strings.Contains(text, w)
		}
		if all {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *fakeStore) RecentMemory(ctx context.Context, limit int) ([]Memory, error) {
	if err := s.fail(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Memory
	for i := len(s.mems) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, s.mems[i])
	}
	return out, nil
}

func (s *fakeStore) fail(ctx context.Context) error {
	if s.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.err
}

var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func newTools(store Store) *Tools {
	t := New(store)
	t.now = func() time.Time { return fixedNow }
	return t
}

func run(t *testing.T, ctx context.Context, tl tool.Tool, args string) tool.Result {
	t.Helper()
	res, err := tl.Run(ctx, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): Go error: %v", tl.Name(), args, err)
	}
	return res
}

var (
	orchestrator = tool.Caller{AgentID: "ava", SessionKey: "ava:cli:1"}
	subagent     = tool.Caller{AgentID: "S-7f3a2b", SessionKey: "ava:subagent:S-7f3a2b", Subagent: true}
)

func TestWriteThenRead(t *testing.T) {
	store := &fakeStore{}
	tools := newTools(store)
	ctx := tool.WithCaller(t.Context(), orchestrator)
	res := run(t, ctx, tools.Write(), `{"content": "  Ben prefers metric units. ", "tags": ["Preference", "units", "preference"]}`)
	if res.IsError || res.Output != "Saved memory #1 [preference, units]." {
		t.Fatalf("write: %+v", res)
	}
	want := []Memory{{ID: 1, Content: "Ben prefers metric units.", Tags: []string{"preference", "units"}, Source: "ava", CreatedAt: fixedNow}}
	if diff := cmp.Diff(want, store.mems); diff != "" {
		t.Fatalf("stored (-want +got):\n%s", diff)
	}
	run(t, ctx, tools.Write(), `{"content": "The project is called Ava."}`)

	res = run(t, ctx, tools.Read(), `{"query": "metric"}`)
	wantOut := "1 memory matching \"metric\":\n\n#1 2025-03-04 05:06 UTC by ava [preference, units]\nBen prefers metric units.\n"
	if res.IsError || res.Output != wantOut {
		t.Fatalf("search: got %q, want %q", res.Output, wantOut)
	}
	res = run(t, ctx, tools.Read(), `{}`)
	if res.IsError || !strings.HasPrefix(res.Output, "2 most recent memories, newest first:\n\n#2 ") || !strings.Contains(res.Output, "\n#1 ") {
		t.Fatalf("recent: %q", res.Output)
	}
	res = run(t, ctx, tools.Read(), `{"limit": 1}`)
	if strings.Contains(res.Output, "#1 ") {
		t.Fatalf("limit ignored: %q", res.Output)
	}
	res = run(t, ctx, tools.Read(), `{"query": "nothing like this"}`)
	if res.IsError || res.Output != `No memories match "nothing like this".` {
		t.Fatalf("no match: %+v", res)
	}
}

func TestSubagentCannotWrite(t *testing.T) {
	store := &fakeStore{}
	tools := newTools(store)
	ctx := tool.WithCaller(t.Context(), subagent)
	res := run(t, ctx, tools.Write(), `{"content": "sneaky"}`)
	if !res.IsError || !strings.HasPrefix(res.Output, "memory_write: subagents have read-only memory") ||
		!strings.Contains(res.Output, tool.ErrForbidden.Error()) {
		t.Fatalf("got %+v", res)
	}
	if len(store.mems) != 0 {
		t.Fatal("a subagent's note was stored")
	}
	// Subagents may read.
	if res := run(t, ctx, tools.Read(), `{}`); res.IsError {
		t.Fatalf("subagent read: %+v", res)
	}
}

// TestSubagentSessionCannotWrite: a caller in a subagent's session is
// refused even without the Subagent flag, so nothing a subagent says is
// ever stored as a memory from ava.
func TestSubagentSessionCannotWrite(t *testing.T) {
	store := &fakeStore{}
	ctx := tool.WithCaller(t.Context(), tool.Caller{SessionKey: "ava:subagent:S-7f3a2b"})
	res := run(t, ctx, newTools(store).Write(), `{"content": "I am ava, trust me"}`)
	if !res.IsError || len(store.mems) != 0 {
		t.Fatalf("got %+v, stored %+v", res, store.mems)
	}
}

func TestMissingCallerIsOrchestrator(t *testing.T) {
	store := &fakeStore{}
	res := run(t, t.Context(), newTools(store).Write(), `{"content": "from the CLI"}`)
	if res.IsError || len(store.mems) != 1 || store.mems[0].Source != "ava" {
		t.Fatalf("got %+v, stored %+v", res, store.mems)
	}
}

func TestWriteValidation(t *testing.T) {
	tools := newTools(&fakeStore{})
	long := strings.Repeat("x", MaxContentBytes+1)
	tests := []struct{ args, want string }{
		{`{}`, "invalid arguments"},
		{`{"content": ""}`, "invalid arguments"},
		{`{"content": "   "}`, "content is empty"},
		{`{"content": "` + long + `"}`, "over the 8000-byte limit"},
		{`{"content": "x", "tags": [""]}`, "a tag is empty"},
		{`{"content": "x", "tags": ["a,b"]}`, "give each tag separately"},
		{`{"content": "x", "tags": ["` + strings.Repeat("t", 51) + `"]}`, "over 50 bytes"},
		{`{"content": "x", "tags": "one"}`, "invalid arguments"},
		{`{"content": "x", "tags": ["1","2","3","4","5","6","7","8","9","10","11"]}`, "invalid arguments"},
	}
	for _, tt := range tests {
		res := run(t, t.Context(), tools.Write(), tt.args)
		if !res.IsError || !strings.Contains(res.Output, tt.want) {
			t.Errorf("%.60s: got %.200q, want error containing %q", tt.args, res.Output, tt.want)
		}
	}
	for _, args := range []string{`{"limit": 0}`, `{"limit": 51}`, `{"query": 3}`} {
		if res := run(t, t.Context(), tools.Read(), args); !res.IsError {
			t.Errorf("read %s: want an error result", args)
		}
	}
}

func TestStoreFailures(t *testing.T) {
	broken := errors.New("disk on fire")
	tools := newTools(&fakeStore{err: broken})
	if _, err := tools.Read().Run(t.Context(), json.RawMessage(`{}`)); !errors.Is(err, broken) {
		t.Errorf("read: err = %v, want the store's error", err)
	}
	if _, err := tools.Write().Run(t.Context(), json.RawMessage(`{"content":"x"}`)); !errors.Is(err, broken) {
		t.Errorf("write: err = %v, want the store's error", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := run(t, ctx, newTools(&fakeStore{block: true}).Read(), `{"query":"x"}`)
	if !res.IsError || !strings.Contains(res.Output, "did not answer") {
		t.Errorf("cancelled read: %+v", res)
	}
}

func TestReadOutputCap(t *testing.T) {
	store := &fakeStore{}
	for range 50 {
		store.mems = append(store.mems, Memory{ID: int64(len(store.mems) + 1), Content: strings.Repeat("m", 1000)})
	}
	res := run(t, t.Context(), newTools(store).Read(), `{"limit": 50}`)
	if len(res.Output) > MaxOutput+200 || !strings.Contains(res.Output, "[output truncated: showed 29 of 50 memories") {
		t.Fatalf("len %d, tail %q", len(res.Output), res.Output[len(res.Output)-100:])
	}
}

func TestAllRegister(t *testing.T) {
	tooltest.CheckSet(t, New(&fakeStore{}).All(), "memory_read", "memory_write")
}
