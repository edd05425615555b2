// Command ava is Ava's command line: one-shot runs, subagents, logs and
// (later) the daemon. Each subcommand parses its flags and calls into the
// packages that do the work; os.Exit happens only here.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/avaagent/ava/internal/initgc"
)

func main() {
	initgc.Restore()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], NewApp(os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	stop()
	os.Exit(code)
}
