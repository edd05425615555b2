package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/sandbox"
	"github.com/avaagent/ava/tool"
)

// conn is one running server: a session, the stdio process if any, and
// the tools it listed.
type conn struct {
	server *server
	cs     *mcp.ClientSession
	proc   *process // a stdio server's
	pid    int
	stderr tailBuffer

	tools    []tool.Tool
	withheld []string

	// ended is closed when the session ends (the process exited, the
	// server hung up, or stop closed it); stopping when stop begins.
	ended    chan struct{}
	stopping chan struct{}
	stopOnce sync.Once
	stopMu   sync.Mutex
	stopped  bool
}

// isDead reports a connection that ended or is being stopped.
func (c *conn) isDead() bool {
	select {
	case <-c.ended:
		return true
	case <-c.stopping:
		return true
	default:
		return false
	}
}

// stop closes the session (a stdio server gets its stdin closed, then
// SIGTERM, then SIGKILL) and kills what is left of its process group.
// It returns once the process is reaped.
func (c *conn) stop() {
	c.stopOnce.Do(func() { close(c.stopping) })
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	if c.cs != nil {
		done := make(chan struct{})
		go func() {
			_ = c.cs.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(3 * closeGrace):
			// A session that will not close (a call that never returns):
			// killing the process ends its pipes, and so the close.
			c.killGroup()
			<-done
		}
	}
	c.killGroup()
}

// killGroup kills the stdio server's process group (the server and
// anything it started that is still in its group; sandboxed, its whole
// PID namespace) and reaps it.
func (c *conn) killGroup() {
	if c.proc != nil {
		c.proc.kill()
	}
}

// setupErr is why the sandbox of a stdio server that ended could not be
// set up, or nil.
func (c *conn) setupErr() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.setupErr()
}

// stderrTail is the end of what the server wrote to stderr, on one line.
func (c *conn) stderrTail() string {
	return strings.Join(strings.Fields(c.stderr.String()), " ")
}

// toolNames lists the offered tools' names.
func (c *conn) toolNames() []string {
	out := make([]string, len(c.tools))
	for i, t := range c.tools {
		out[i] = t.Name()
	}
	slices.Sort(out)
	return out
}

// Limits on what a server's listing may bring into a model's context.
const (
	maxTools       = 128
	maxDescription = 2048
	maxSchema      = 64 << 10
	maxToolName    = 64
)

// list lists the server's tools and adapts them; no tool at all is an
// error.
func (c *conn) list(ctx context.Context) error {
	name := c.server.spec.Name
	seen := map[string]bool{}
	listed := 0
	for t, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		listed++
		if listed > maxTools {
			return fmt.Errorf("list tools: more than %d tools", maxTools)
		}
		full := ToolName(name, t.Name)
		if why := c.server.p.withheld(t.Name, full); why != "" {
			c.withheld = append(c.withheld, fmt.Sprintf("%s (%s)", t.Name, why))
			c.server.p.log.Warn("MCP tool withheld", "server", name, "tool", t.Name, "why", why)
			continue
		}
		if seen[full] {
			c.withheld = append(c.withheld, fmt.Sprintf("%s (its name %s is taken by another of its tools)", t.Name, full))
			continue
		}
		seen[full] = true
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			c.withheld = append(c.withheld, fmt.Sprintf("%s (%v)", t.Name, err))
			continue
		}
		c.tools = append(c.tools, &mcpTool{server: c.server, name: full, remote: t.Name, desc: description(name, t), schema: schema})
	}
	if len(c.tools) == 0 {
		if listed > 0 {
			return fmt.Errorf("lists no tool Ava may offer (withheld: %s)", strings.Join(c.withheld, "; "))
		}
		return errors.New("lists no tools")
	}
	return nil
}

// withheld says why a server's tool is not offered, or "".
func (p *Pool) withheld(remote, full string) string {
	if p.opt.Withhold != nil {
		if why := p.opt.Withhold(remote); why != "" {
			return "named like Ava's " + remote + ": " + why
		}
		if why := p.opt.Withhold(full); why != "" {
			return why
		}
	}
	if strings.Contains(strings.ToLower(remote), "spawn") {
		return "its name says it spawns, and subagents never spawn"
	}
	return ""
}

// invalidNameChar is what a model's tool name may not hold.
var invalidNameChar = lazyre.New(`[^A-Za-z0-9_-]`)

// ToolName is the name a server's tool is offered under:
// <server>__<tool>, with characters a model's tool name may not hold
// replaced by _, and cut to 64 characters.
func ToolName(server, remote string) string {
	n := server + "__" + invalidNameChar().ReplaceAllString(remote, "_")
	if len(n) > maxToolName {
		n = n[:maxToolName]
	}
	return n
}

// description marks a server's description of its tool as the server's.
func description(server string, t *mcp.Tool) string {
	d := strings.TrimSpace(t.Description)
	if d == "" && t.Annotations != nil {
		d = t.Annotations.Title
	}
	if len(d) > maxDescription {
		d = d[:maxDescription]
		for !utf8.ValidString(d) {
			d = d[:len(d)-1]
		}
		d += "…"
	}
	return fmt.Sprintf("[tool %q of MCP server %s; its description, as the server gives it:] %s", t.Name, server, tool.EscapeUntrusted(d))
}

// inputSchema is the server's input schema, which must be a JSON object
// schema of bounded size; none at all is an empty object schema.
func inputSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if len(b) > maxSchema {
		return nil, fmt.Errorf("input schema of %d bytes, over %d", len(b), maxSchema)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	if t, ok := m["type"]; ok && t != "object" {
		return nil, fmt.Errorf("input schema of type %v, not object", t)
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
		if b, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// mcpTool is one of a server's tools as a tool.Tool.
type mcpTool struct {
	server *server
	name   string // <server>__<tool>
	remote string // the server's own name for it
	desc   string
	schema json.RawMessage
}

func (t *mcpTool) Name() string            { return t.name }
func (t *mcpTool) Description() string     { return t.desc }
func (t *mcpTool) Schema() json.RawMessage { return t.schema }

// maxOutput bounds a result's text.
const maxOutput = 256 << 10

// Run calls the tool on the server, starting it (again) if it is not
// running. A failure of the server or of the call is an error result
// naming the server; cancelling ctx cancels the call.
func (t *mcpTool) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	s := t.server
	c, err := s.get(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return tool.Errorf("%s: %v", t.name, err), nil
	}
	s.begin()
	defer s.end()
	// A call stops when the server is stopped (idle, Close).
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopping:
			cancel()
		case <-callCtx.Done():
		}
	}()
	var a any = map[string]any{}
	if len(bytes.TrimSpace(args)) > 0 && !bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		a = args
	}
	res, err := c.cs.CallTool(callCtx, &mcp.CallToolParams{Name: t.remote, Arguments: a})
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		if connectionLost(err) || c.isDead() {
			// The next use connects (or starts the server) again. Once
			// the process is reaped (stop), what it said on stderr as it
			// went, which tells why, is all there; a process that does
			// not go within a second is left to stop.
			reaped := make(chan struct{})
			if !s.p.goTracked(func() { c.stop(); close(reaped) }) {
				close(reaped)
			}
			select {
			case <-reaped:
			case <-time.After(time.Second):
			}
			msg := fmt.Sprintf("%s: MCP server %s stopped during the call (it is started again on the next call): %v", t.name, s.spec.Name, err)
			if tail := c.stderrTail(); tail != "" {
				msg += " (stderr: " + tail + ")"
			}
			return tool.Result{Output: msg, IsError: true}, nil
		}
		return withRepoNotice(tool.Errorf("%s: MCP server %s: %v", t.name, s.spec.Name, err), c), nil
	}
	return withRepoNotice(resultOf(res), c), nil
}

// withRepoNotice checks the workspace of a sandboxed server after a call
// and adds Ava's note to r when the server left a repository there,
// which the check has moved aside (see sandbox.Cmd.CheckRepos). A
// server that acts between calls is found at its next call or its end.
func withRepoNotice(r tool.Result, c *conn) tool.Result {
	if c.proc == nil || c.proc.box == nil {
		return r
	}
	if note := sandbox.RepoNotice(c.proc.box.CheckRepos()); note != "" {
		r.Output += "\n" + note
	}
	return r
}

// connectionLost reports an error that means the session is gone: the
// SDK's closed connection, or the server's end of the pipe or stream
// closing mid-call (EOF).
func connectionLost(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// resultOf turns a call's result into text: the text contents joined,
// other contents described, structured content as JSON (when the text
// does not already hold it), and isError as an error result.
func resultOf(res *mcp.CallToolResult) tool.Result {
	var parts []string
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s %s]", v.Name, v.URI))
		case *mcp.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else if v.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, %d bytes, not shown]", v.Resource.URI, len(v.Resource.Blob)))
			}
		}
	}
	text := strings.Join(parts, "\n")
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil && !sameJSON(text, b) {
			if text != "" {
				text += "\n"
			}
			text += string(b)
		}
	}
	if len(text) > maxOutput {
		cut := text[:maxOutput]
		for !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		text = cut + fmt.Sprintf("\n[… %d more bytes cut]", len(text)-len(cut))
	}
	if text == "" && res.IsError {
		text = "the tool failed and said nothing"
	}
	return tool.Result{Output: text, IsError: res.IsError}
}

// sameJSON reports whether text is the JSON value b (servers often send
// structured content as text too).
func sameJSON(text string, b []byte) bool {
	var x, y any
	if json.Unmarshal([]byte(text), &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(bx, by)
}

// tailBuffer keeps the last 2 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailSize {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "")
}
