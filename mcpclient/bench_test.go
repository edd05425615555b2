package mcpclient_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/avaagent/ava/mcpclient"
	"github.com/avaagent/ava/tool"
	"github.com/avaagent/ava/tool/files"
)

// The overhead of a tool call through a stdio MCP server against
// built-in tools. Each benchmark records every call's duration and
// reports the median and the 99th percentile besides ns/op:
//
//	go test -run '^$' -bench ToolCall -benchtime=2000x ./mcpclient/

// benchSpec is the test binary as a server, in the sandbox (its folder
// mounted read-only) or unsandboxed.
func benchSpec(b *testing.B, sandboxed bool) mcpclient.Spec {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	sp := mcpclient.Spec{Name: "srv", Command: exe, Env: map[string]string{serverEnv: "normal"}}
	if sandboxed {
		sp.ReadOnlyPaths = []string{filepath.Dir(exe)}
	} else {
		off := false
		sp.Sandbox = &off
	}
	return sp
}

// BenchmarkToolCallMCPStdio calls echo on an MCP server built from the Go
// SDK (this test binary, started as a subprocess) over stdio, through
// the pool's tool.Tool, as a subagent's tool call goes, unsandboxed and
// in the sandbox.
func BenchmarkToolCallMCPStdio(b *testing.B) {
	for _, sandboxed := range []bool{false, true} {
		b.Run(map[bool]string{false: "unsandboxed", true: "sandboxed"}[sandboxed], func(b *testing.B) {
			p, err := mcpclient.New(mcpclient.Options{Servers: []mcpclient.Spec{benchSpec(b, sandboxed)}, Workspace: b.TempDir(),
				StateDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			tools, err := p.Tools(context.Background(), []string{"srv"})
			if err != nil {
				b.Fatal(err)
			}
			echo := find(b, tools, "srv__echo")
			benchCalls(b, echo, `{"text":"hello"}`, "echo: hello")
		})
	}
}

// BenchmarkServerStart starts a stdio server and lists its tools (a
// subagent's first use), then stops it, unsandboxed and in the sandbox:
// the sandbox's cost per server start. It reports the median and the
// 99th percentile of start-and-list.
//
//	go test -run '^$' -bench ServerStart -benchtime=50x ./mcpclient/
func BenchmarkServerStart(b *testing.B) {
	for _, sandboxed := range []bool{false, true} {
		b.Run(map[bool]string{false: "unsandboxed", true: "sandboxed"}[sandboxed], func(b *testing.B) {
			opt := mcpclient.Options{Servers: []mcpclient.Spec{benchSpec(b, sandboxed)}, Workspace: b.TempDir(), StateDir: b.TempDir(),
				Logger: slog.New(slog.DiscardHandler)}
			var durs []time.Duration
			for b.Loop() {
				p, err := mcpclient.New(opt)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				_, err = p.Tools(context.Background(), []string{"srv"})
				durs = append(durs, time.Since(start))
				p.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "median-ns")
			b.ReportMetric(float64(durs[min(len(durs)-1, len(durs)*99/100)].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkToolCallBuiltinEcho calls the same echo as a built-in tool
// (tool.NewFunc, in process): the floor of any tool call.
func BenchmarkToolCallBuiltinEcho(b *testing.B) {
	echo := tool.NewFunc("echo", "Say the text back.", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (tool.Result, error) {
		return tool.Result{Output: "echo: " + a.Text}, nil
	})
	benchCalls(b, echo, `{"text":"hello"}`, "echo: hello")
}

// BenchmarkToolCallBuiltinReadFile calls the built-in read_file on a
// one-line file: a built-in tool that does I/O.
func BenchmarkToolCallBuiltinReadFile(b *testing.B) {
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "note.txt"), []byte("hello\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	benchCalls(b, files.New(files.Config{Workspace: ws}).ReadFile(), `{"path":"note.txt"}`, "hello")
}

func find(b *testing.B, tools []tool.Tool, name string) tool.Tool {
	b.Helper()
	for _, t := range tools {
		if t.Name() == name {
			return t
		}
	}
	b.Fatalf("no tool %s", name)
	return nil
}

// benchCalls runs t with args b.N times (after 20 warm-up calls),
// checks each output holds want, and reports the median and the 99th
// percentile of the calls' durations.
func benchCalls(b *testing.B, t tool.Tool, args, want string) {
	ctx := context.Background()
	raw := json.RawMessage(args)
	call := func() time.Duration {
		start := time.Now()
		res, err := t.Run(ctx, raw)
		d := time.Since(start)
		if err != nil || res.IsError || !strings.Contains(res.Output, want) {
			b.Fatalf("%s: %+v %v", t.Name(), res, err)
		}
		return d
	}
	for range 20 {
		call()
	}
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		durs = append(durs, call())
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds()), "median-ns")
	b.ReportMetric(float64(durs[min(len(durs)-1, len(durs)*99/100)].Nanoseconds()), "p99-ns")
}
