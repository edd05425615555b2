package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write docs/cli.md's generated command reference")

// TestCLIReference: docs/cli.md's command reference is the one the
// command definitions generate (issue 42 item 9); -update writes it.
func TestCLIReference(t *testing.T) {
	root := newRootCmd(NewApp(nil, &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" }))
	root.InitDefaultHelpCmd()
	want := cliReference(root)
	doc, err := os.ReadFile(cliDocPath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), cliDocBegin+"\n")
	got, after, ok2 := strings.Cut(rest, cliDocEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the markers %q and %q", cliDocPath, cliDocBegin, cliDocEnd)
	}
	if strings.TrimSpace(got) == strings.TrimSpace(string(want)) {
		return
	}
	if *update {
		out := before + cliDocBegin + "\n" + string(want) + "\n" + cliDocEnd + after
		if err := os.WriteFile(cliDocPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s's command reference is stale: run go test ./cmd/ava -run TestCLIReference -update", cliDocPath)
}
