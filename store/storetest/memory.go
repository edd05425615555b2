package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/store"
)

func memoryCases() []testCase {
	return []testCase{
		{"MemoryWriteRecent", testMemoryWriteRecent},
		{"MemorySearch", testMemorySearch},
		{"MemorySearchHostileText", testMemorySearchHostileText},
	}
}

func testMemoryWriteRecent(t *testing.T, s store.Store) {
	var written []store.Memory
	for i := range 12 {
		m, err := s.WriteMemory(ctx(t), store.Memory{
			Content: fmt.Sprintf("fact %d", i), Tags: []string{" go ", "", "go", "store"},
			Source: "ava:cli:m", CreatedAt: base.Add(time.Duration(i) * time.Minute),
		})
		must(t, err)
		if m.ID == 0 {
			t.Fatalf("written memory has no ID: %+v", m)
		}
		written = append(written, m)
	}
	if diff := cmp.Diff([]string{"go", "store"}, written[0].Tags); diff != "" {
		t.Fatalf("tags not normalised (-want +got):\n%s", diff)
	}
	got, err := s.RecentMemory(ctx(t), 2)
	must(t, err)
	if diff := cmp.Diff([]store.Memory{written[11], written[10]}, got); diff != "" {
		t.Fatalf("RecentMemory(2) (-want +got):\n%s", diff)
	}
	got, err = s.RecentMemory(ctx(t), 0)
	must(t, err)
	if len(got) == 0 || len(got) > 12 || got[0].ID != written[11].ID {
		t.Fatalf("RecentMemory(0) returned %d memories starting %+v", len(got), got)
	}
	_, err = s.RecentMemory(ctx(t), -1)
	wantPlainErr(t, err)
	_, err = s.WriteMemory(ctx(t), store.Memory{Content: "  \n"})
	wantPlainErr(t, err)
}

// memoryFixture writes memories the search tests look for and returns
// them by a short name.
func memoryFixture(t *testing.T, s store.Store) map[string]store.Memory {
	t.Helper()
	out := map[string]store.Memory{}
	for name, m := range map[string]store.Memory{
		"deploy":   {Content: "Deploys use a blue-green rollout and never happen on Fridays"},
		"tabs":     {Content: "The user prefers tabs over spaces", Tags: []string{"editor"}},
		"codename": {Content: `Project codename is "Falcon" (top secret)`},
		"ops":      {Content: "NEAR and OR are FTS operators; col:umn and ^caret too"},
		"cafe":     {Content: "Meeting at the Café Müller every Monday"},
	} {
		w, err := s.WriteMemory(ctx(t), m)
		must(t, err)
		out[name] = w
	}
	return out
}

func testMemorySearch(t *testing.T, s store.Store) {
	mem := memoryFixture(t, s)
	ids := func(ms []store.Memory) []int64 {
		out := []int64{}
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string // in rank order; extra matches may follow
		limit int
	}{
		{"deploys", []string{"deploy"}, 0},
		{"rollout", []string{"deploy"}, 0},
		{"roll", []string{"deploy"}, 0}, // word prefix
		{"editor", []string{"tabs"}, 0}, // tags are searched
		{`"Falcon"`, []string{"codename"}, 0},
		{"FALCON", []string{"codename"}, 0},
		{"cafe muller", []string{"cafe"}, 0}, // diacritics folded
		{"tabs spaces Fridays", []string{"tabs", "deploy"}, 0},
		{"tabs spaces Fridays", []string{"tabs"}, 1},
	} {
		got, err := s.SearchMemory(ctx(t), tc.query, tc.limit)
		if err != nil {
			t.Fatalf("SearchMemory(%q): %v", tc.query, err)
		}
		var want []int64
		for _, name := range tc.want {
			want = append(want, mem[name].ID)
		}
		if len(got) < len(want) || (tc.limit > 0 && len(got) > tc.limit) {
			t.Fatalf("SearchMemory(%q, %d) = %d results %v, want %v first", tc.query, tc.limit, len(got), ids(got), want)
		}
		if diff := cmp.Diff(want, ids(got)[:len(want)]); diff != "" {
			t.Fatalf("SearchMemory(%q) ranking (-want +got):\n%s", tc.query, diff)
		}
	}
	got, err := s.SearchMemory(ctx(t), "tabs", 0)
	must(t, err)
	if diff := cmp.Diff([]store.Memory{mem["tabs"]}, got); diff != "" {
		t.Fatalf("SearchMemory(tabs) (-want +got):\n%s", diff)
	}
	got, err = s.SearchMemory(ctx(t), "zeppelin", 0)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("SearchMemory(zeppelin) = %+v, want nothing", got)
	}
	_, err = s.SearchMemory(ctx(t), "  ", 0)
	wantPlainErr(t, err)
	_, err = s.SearchMemory(ctx(t), "tabs", -1)
	wantPlainErr(t, err)
}

// testMemorySearchHostileText searches for text full of FTS5 syntax. None
// of it may break the query, and operators are taken as words.
func testMemorySearchHostileText(t *testing.T, s store.Store) {
	mem := memoryFixture(t, s)
	for _, q := range []string{
		`"`, `""`, `"Falcon`, `Falcon"`, `a"b`, `AND`, `OR OR`, `NOT tabs`, `tabs NEAR/2 spaces`,
		`NEAR(tabs spaces)`, `content:tabs`, `{content tags}: tabs`, `^tabs`, `tabs*`, `*`, `(`, `)`,
		`-tabs`, `+tabs`, `'single'`, `%_\`, `tabs AND (spaces OR`, "\x00", "tab\ts", `""""`, `🙂 tabs`,
	} {
		if _, err := s.SearchMemory(ctx(t), q, 0); err != nil {
			t.Fatalf("SearchMemory(%q): %v", q, err)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{`NOT tabs`, "tabs"},           // NOT is a word, not an operator
		{`NEAR(`, "ops"},               // "NEAR" as a word
		{`content:Falcon`, "codename"}, // no column filter: "content" and "Falcon" words
		{`"Falcon" OR`, "codename"},
		{`col:umn`, "ops"},
	} {
		got, err := s.SearchMemory(ctx(t), tc.query, 0)
		must(t, err)
		found := false
		for _, m := range got {
			found = found || m.ID == mem[tc.want].ID
		}
		if !found {
			t.Fatalf("SearchMemory(%q) = %v, want it to find %q", tc.query, got, tc.want)
		}
	}
	got, err := s.SearchMemory(ctx(t), `*** ()`, 0)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("a query with no words matched %v", got)
	}
}
