// Command ava is Ava's command line: one-shot runs, subagents, logs and
// (later) the daemon. Each subcommand parses its flags and calls into the
// packages that do the work; os.Exit happens only here.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/avaagent/ava/internal/initgc"
)

// startWindow is how long after main the collector stays off (see
// initgc): a command's first model request goes out at about 20–40 ms.
const startWindow = 100 * time.Millisecond

func main() {
	initgc.RestoreAfter(startWindow)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], NewApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	stop()
	os.Exit(code)
}
