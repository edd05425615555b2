package mcpserver

import (
	"context"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava"
)

// follow waits until done is closed, sending the request's progress
// notifications (when it carries a progress token) with the runs'
// status lines: when they change, and at least every ProgressEvery; and
// putting the runs' questions to the client (ask, nil: not asked). It
// returns ctx's cause when the request is cancelled first, and an input
// result when a question ends the call to come again with the answer.
func (s *Server) follow(ctx context.Context, req *mcp.CallToolRequest, done <-chan struct{}, runs func() []ava.Subagent, ask *asker) (*mcp.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	poll := time.NewTicker(s.opt.PollEvery)
	defer poll.Stop()
	var (
		n        float64
		last     string
		lastSent time.Time
	)
	notify := func() {
		if token == nil {
			return
		}
		line := statusLines(runs())
		if line == last && time.Since(lastSent) < s.opt.ProgressEvery {
			return
		}
		n++
		last, lastSent = line, time.Now()
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: line})
		if err != nil && ctx.Err() == nil {
			s.log.Debug("progress notification", "err", err)
		}
	}
	notify()
	defer ask.stop()
	for {
		select {
		case <-done:
			return nil, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-poll.C:
			notify()
			if ask == nil {
				continue
			}
			if input, err := ask.poll(ctx, runs()); input != nil || err != nil {
				return input, err
			}
		}
	}
}

// statusLines is the runs' status, one line each (ava.Subagent.String,
// with the figures every surface shows): "S-7f3a2b researcher running
// 12s, 2034 tokens, 0.30¢: calling the model".
func statusLines(runs []ava.Subagent) string {
	lines := make([]string, 0, len(runs))
	for _, sa := range runs {
		lines = append(lines, sa.String())
	}
	return strings.Join(lines, "\n")
}
