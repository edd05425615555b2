package chat

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
)

// TestLocalGoesThroughTheCore: the in-process backend answers from the
// runtime: a chat that sent nothing has nothing to stop and no
// subagents, and another session's proposal or an unknown subagent is
// not found.
func TestLocalGoesThroughTheCore(t *testing.T) {
	root := t.TempDir()
	vars := map[string]string{"AVA_DATA_ROOT": root, "AVA_WORKSPACE": root, "AVA_MODEL": ava.OfflineModel}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := ava.Open(ctx, ava.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	l := &Local{Runtime: rt, Session: "ava:chat:local"}
	if stopped, err := l.Stop(ctx, ""); stopped || err != nil {
		t.Errorf("Stop of a chat that sent nothing: %v, %v", stopped, err)
	}
	if subs, err := l.Subagents(ctx); len(subs) != 0 || err != nil {
		t.Errorf("Subagents: %+v, %v", subs, err)
	}
	if err := l.Confirm(ctx, "P-000000"); !errors.Is(err, ava.ErrNotFound) {
		t.Errorf("Confirm of no proposal: %v", err)
	}
	if _, err := l.Log(ctx, "S-000000", 5); ava.KindOf(err) != ava.NotFound {
		t.Errorf("Log of no subagent: %v", err)
	}
}
