package main_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkMCPColdStart starts `ava mcp` (the built binary) once per
// iteration and times, from the start of the process, the answers to
// initialize and to tools/list, written as raw JSON-RPC lines; it reports
// their medians and 99th percentiles. The data root is created by a
// warm-up start, so each iteration is a process start on an existing
// data root, as a client's restart is:
//
//	go test -run '^$' -bench MCPColdStart -benchtime=30x ./cmd/ava/
func BenchmarkMCPColdStart(b *testing.B) {
	root := b.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "AVA_DATA_ROOT=" + filepath.Join(root, "data"),
		"AVA_WORKSPACE=" + root, "AVA_CONFIRM=never"}
	const (
		initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"
		initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
		listTools   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"
	)
	run := func() (toInit, toList time.Duration) {
		cmd := exec.Command(avaBin, "mcp")
		cmd.Env = env
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			in.Close()
			go io.Copy(io.Discard, out) // until the process exits
			if err := cmd.Wait(); err != nil {
				b.Errorf("ava mcp: %v\n%s", err, stderr.String())
			}
		}()
		r := bufio.NewReader(out)
		read := func(want string) {
			line, err := r.ReadString('\n')
			if err != nil || !strings.Contains(line, want) {
				b.Fatalf("ava mcp answered %q (%v), want %s\n%s", line, err, want, stderr.String())
			}
		}
		io.WriteString(in, initialize)
		read(`"serverInfo"`)
		toInit = time.Since(start)
		io.WriteString(in, initialized+listTools)
		read(`"spawn_subagent"`)
		toList = time.Since(start)
		return toInit, toList
	}
	run() // creates the data root
	var inits, lists []time.Duration
	for b.Loop() {
		i, l := run()
		inits, lists = append(inits, i), append(lists, l)
	}
	slices.Sort(inits)
	slices.Sort(lists)
	p := func(d []time.Duration, q int) float64 {
		return float64(d[min(len(d)-1, len(d)*q/100)].Microseconds()) / 1000
	}
	b.ReportMetric(p(inits, 50), "init-median-ms")
	b.ReportMetric(p(inits, 99), "init-p99-ms")
	b.ReportMetric(p(lists, 50), "list-median-ms")
	b.ReportMetric(p(lists, 99), "list-p99-ms")
}
