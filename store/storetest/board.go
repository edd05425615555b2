package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/avaagent/ava/store"
)

func boardCases() []testCase {
	return []testCase{
		{"FindingsPostAndRead", testFindingsPostAndRead},
		{"FindingsCutLongText", testFindingsCutLongText},
		{"FindingsBoundsUnderConcurrency", testFindingsBounds},
	}
}

func finding(group, run, short, text string) store.Finding {
	return store.Finding{GroupID: group, RunID: run, ShortID: short, Role: "researcher", Text: text}
}

// testFindingsPostAndRead posts to two groups and reads one back: its
// own findings only, oldest first, after an ID, without a run's.
func testFindingsPostAndRead(t *testing.T, s store.Store) {
	g1, g2 := uuid.NewString(), uuid.NewString()
	a, b := uuid.NewString(), uuid.NewString()
	var posted []store.Finding
	for i, f := range []store.Finding{
		finding(g1, a, "S-aaaaaa", "  first from a \n"),
		finding(g2, a, "S-aaaaaa", "other group"),
		finding(g1, b, "S-bbbbbb", "first from b"),
		finding(g1, a, "S-aaaaaa", "second from a"),
	} {
		f.CreatedAt = base.Add(time.Duration(i) * time.Second)
		got, err := s.PostFinding(ctx(t), f)
		must(t, err)
		if got.ID == 0 || !got.CreatedAt.Equal(f.CreatedAt) {
			t.Fatalf("posted %+v", got)
		}
		posted = append(posted, got)
	}
	if posted[0].Text != "first from a" {
		t.Errorf("text %q, want it trimmed", posted[0].Text)
	}
	if !(posted[0].ID < posted[2].ID && posted[2].ID < posted[3].ID) {
		t.Errorf("IDs do not increase: %d %d %d", posted[0].ID, posted[2].ID, posted[3].ID)
	}
	all, err := s.Findings(ctx(t), g1, 0, "")
	must(t, err)
	if diff := cmp.Diff([]store.Finding{posted[0], posted[2], posted[3]}, all); diff != "" {
		t.Fatalf("Findings(g1) (-want +got):\n%s", diff)
	}
	after, err := s.Findings(ctx(t), g1, posted[0].ID, "")
	must(t, err)
	if diff := cmp.Diff([]store.Finding{posted[2], posted[3]}, after); diff != "" {
		t.Fatalf("Findings(g1, after first) (-want +got):\n%s", diff)
	}
	others, err := s.Findings(ctx(t), g1, 0, a)
	must(t, err)
	if diff := cmp.Diff([]store.Finding{posted[2]}, others); diff != "" {
		t.Fatalf("Findings(g1, not a) (-want +got):\n%s", diff)
	}
	none, err := s.Findings(ctx(t), uuid.NewString(), 0, "")
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("an unknown group has findings: %+v", none)
	}
	_, err = s.PostFinding(ctx(t), finding(g1, a, "S-aaaaaa", " \n "))
	wantPlainErr(t, err)
	_, err = s.PostFinding(ctx(t), finding("", a, "S-aaaaaa", "x"))
	wantPlainErr(t, err)
}

// testFindingsCutLongText posts a text over the bound: it is stored cut,
// marked, within the bound, on a rune boundary.
func testFindingsCutLongText(t *testing.T, s store.Store) {
	long := strings.Repeat("é", store.MaxFindingBytes) // two bytes each
	f, err := s.PostFinding(ctx(t), finding(uuid.NewString(), uuid.NewString(), "S-cccccc", long))
	must(t, err)
	if len(f.Text) > store.MaxFindingBytes || !strings.HasSuffix(f.Text, store.CutNote) || !strings.HasPrefix(f.Text, "éé") {
		t.Fatalf("cut text is %d bytes, ends %q", len(f.Text), f.Text[max(len(f.Text)-60, 0):])
	}
	got, err := s.Findings(ctx(t), f.GroupID, 0, "")
	must(t, err)
	if len(got) != 1 || got[0].Text != f.Text {
		t.Fatalf("stored text differs from the returned one")
	}
}

// testFindingsBounds posts from many goroutines at once: a run gets
// exactly MaxFindingsPerRun, a group exactly MaxFindingsPerGroup, and
// the rest are refused with ErrBoardFull.
func testFindingsBounds(t *testing.T, s store.Store) {
	group, run := uuid.NewString(), uuid.NewString()
	ok, full := post(t, s, group, []string{run}, store.MaxFindingsPerRun+10)
	if ok != store.MaxFindingsPerRun || full != 10 {
		t.Fatalf("one run: %d posted, %d refused; want %d and 10", ok, full, store.MaxFindingsPerRun)
	}
	runs := []string{}
	for range store.MaxFindingsPerGroup/store.MaxFindingsPerRun + 1 {
		runs = append(runs, uuid.NewString())
	}
	ok, _ = post(t, s, group, runs[1:], store.MaxFindingsPerRun)
	got, err := s.Findings(ctx(t), group, 0, "")
	must(t, err)
	if ok+store.MaxFindingsPerRun != store.MaxFindingsPerGroup || len(got) != store.MaxFindingsPerGroup {
		t.Fatalf("group: %d posted by the others, %d stored; want %d in all", ok, len(got), store.MaxFindingsPerGroup)
	}
	_, err = s.PostFinding(ctx(t), finding(uuid.NewString(), run, "S-dddddd", "another group has room"))
	must(t, err)
}

// post posts n findings for each run, concurrently, and counts those
// stored and those refused as full; any other error fails the test.
func post(t *testing.T, s store.Store, group string, runs []string, n int) (ok, full int) {
	t.Helper()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, run := range runs {
		for i := range n {
			wg.Go(func() {
				_, err := s.PostFinding(ctx(t), finding(group, run, "S-eeeeee", fmt.Sprintf("finding %d", i)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, store.ErrBoardFull):
					full++
				default:
					t.Errorf("post: %v", err)
				}
			})
		}
	}
	wg.Wait()
	return ok, full
}
