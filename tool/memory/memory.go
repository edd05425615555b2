// Package memory holds Ava's long-term memory tools: memory_read, which
// every agent may use, and memory_write, which only the orchestrator may:
// subagents read memory but never write it. The rule is enforced here,
// from the caller in the context (tool.CallerFrom), whatever tool list an
// agent was given. A call with no caller in its context is treated as the
// orchestrator's: the agent loop always sets one for agents, so a missing
// caller means Ava's own code (a CLI command, a test) is calling.
//
// The memories live in a Store; the SQLite store implements it.
package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/avaagent/ava/store"
	"github.com/avaagent/ava/tool"
)

// Memory is one remembered note, as the store keeps it.
type Memory = store.Memory

// Store keeps memories.
type Store interface {
	// WriteMemory stores m and returns it as stored, with its ID set.
	WriteMemory(ctx context.Context, m Memory) (Memory, error)
	// SearchMemory returns up to limit memories matching query (in their
	// content or tags), best matches first.
	SearchMemory(ctx context.Context, query string, limit int) ([]Memory, error)
	// RecentMemory returns up to limit memories, newest first.
	RecentMemory(ctx context.Context, limit int) ([]Memory, error)
}

// Limits of the tools' arguments and output.
const (
	DefaultReadLimit = 10
	MaxReadLimit     = 50
	MaxContentBytes  = 8000
	MaxTags          = 10
	MaxTagBytes      = 50
	MaxOutput        = 30_000
	// Timeout bounds one store call.
	Timeout = 10 * time.Second
)

// subagentSessionPrefix starts every subagent's session key.
const subagentSessionPrefix = "ava:subagent:"

// Tools builds the memory tools over one Store.
type Tools struct {
	store Store
	now   func() time.Time
}

// New returns the memory tools over store.
func New(store Store) *Tools {
	return &Tools{store: store, now: time.Now}
}

// All returns both memory tools.
func (t *Tools) All() []tool.Tool {
	return []tool.Tool{t.Read(), t.Write()}
}

type readArgs struct {
	Query string `json:"query,omitempty" jsonschema:"words to look for in memories' content and tags; empty for the most recent memories"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many memories to return (default 10)"`
}

type writeArgs struct {
	Content string   `json:"content" jsonschema:"the fact, preference or decision to remember, written to make sense on its own later"`
	Tags    []string `json:"tags,omitempty" jsonschema:"short labels for finding it again, e.g. user-preference or project:ava"`
}

// Read returns the memory_read tool.
func (t *Tools) Read() tool.Tool {
	desc := "Read Ava's long-term memory: notes kept across conversations (the person's preferences, facts, " +
		"decisions, earlier findings). With a query, returns the memories that best match it; without one, " +
		"the most recent. Check memory before asking the person something they may have told Ava before."
	s := inferSchema[readArgs]()
	lo, hi := float64(1), float64(MaxReadLimit)
	s.Properties["limit"].Minimum, s.Properties["limit"].Maximum = &lo, &hi
	return tool.NewFuncWithSchema("memory_read", desc, s, t.read)
}

// Write returns the memory_write tool.
func (t *Tools) Write() tool.Tool {
	desc := "Save a note to Ava's long-term memory, for later conversations: a preference the person stated, " +
		"a fact worth keeping, a decision and its reason. One note per call, written to stand on its own. " +
		"Only the orchestrator may write memory; subagents have read-only memory and should report what is " +
		"worth remembering in their result instead."
	s := inferSchema[writeArgs]()
	minLen, maxTags := 1, MaxTags
	s.Properties["content"].MinLength = &minLen
	s.Properties["tags"].MaxItems = &maxTags
	s.Properties["tags"].Type, s.Properties["tags"].Types = "array", nil
	return tool.NewFuncWithSchema("memory_write", desc, s, t.write)
}

func (t *Tools) read(ctx context.Context, a readArgs) (tool.Result, error) {
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	limit = min(limit, MaxReadLimit)
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	query := strings.TrimSpace(a.Query)
	var mems []Memory
	var err error
	if query == "" {
		mems, err = t.store.RecentMemory(ctx, limit)
	} else {
		mems, err = t.store.SearchMemory(ctx, query, limit)
	}
	if err != nil {
		if ctx.Err() != nil {
			return tool.Errorf("memory_read: the memory store did not answer: %v", err), nil
		}
		return tool.Result{}, fmt.Errorf("memory_read: %w", err)
	}
	return tool.Result{Output: formatMemories(query, mems)}, nil
}

func (t *Tools) write(ctx context.Context, a writeArgs) (tool.Result, error) {
	caller, ok := tool.CallerFrom(ctx)
	// A subagent is refused whether the flag or its session key says so,
	// so no memory is ever written by one and labelled as from ava.
	if ok && (caller.Subagent || strings.HasPrefix(caller.SessionKey, subagentSessionPrefix)) {
		return tool.Errorf("memory_write: subagents have read-only memory (%v); put what is worth remembering in your result and the orchestrator will decide",
			tool.ErrForbidden), nil
	}
	source := "ava"
	if ok && caller.AgentID != "" {
		source = caller.AgentID
	}
	m, msg := validate(a)
	if msg != "" {
		return tool.Errorf("memory_write: %s", msg), nil
	}
	m.Source, m.CreatedAt = source, t.now().UTC()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	saved, err := t.store.WriteMemory(ctx, m)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Errorf("memory_write: the memory store did not answer: %v", err), nil
		}
		return tool.Result{}, fmt.Errorf("memory_write: %w", err)
	}
	out := fmt.Sprintf("Saved memory #%d", saved.ID)
	if len(saved.Tags) > 0 {
		out += " [" + strings.Join(saved.Tags, ", ") + "]"
	}
	return tool.Result{Output: out + "."}, nil
}

// validate checks and normalises a note; msg says what is wrong.
func validate(a writeArgs) (m Memory, msg string) {
	content := strings.TrimSpace(a.Content)
	switch {
	case content == "":
		return m, "content is empty; give the note to remember"
	case len(content) > MaxContentBytes:
		return m, fmt.Sprintf("content is %d bytes, over the %d-byte limit; save a shorter summary", len(content), MaxContentBytes)
	}
	var tags []string
	seen := map[string]bool{}
	for _, tag := range a.Tags {
		tag = strings.ToLower(strings.TrimSpace(tag))
		switch {
		case tag == "":
			return m, "a tag is empty"
		case len(tag) > MaxTagBytes:
			return m, fmt.Sprintf("tag %q is over %d bytes", tag, MaxTagBytes)
		case strings.ContainsAny(tag, ",\n"):
			return m, fmt.Sprintf("tag %q contains a comma or newline; give each tag separately", tag)
		}
		if !seen[tag] {
			seen[tag] = true
			tags = append(tags, tag)
		}
	}
	return Memory{Content: content, Tags: tags}, ""
}

// formatMemories prints memories for the model, capped at MaxOutput.
func formatMemories(query string, mems []Memory) string {
	if len(mems) == 0 {
		if query == "" {
			return "Memory is empty."
		}
		return fmt.Sprintf("No memories match %q.", query)
	}
	var b strings.Builder
	noun := "memories"
	if len(mems) == 1 {
		noun = "memory"
	}
	if query == "" {
		fmt.Fprintf(&b, "%d most recent %s, newest first:\n", len(mems), noun)
	} else {
		fmt.Fprintf(&b, "%d %s matching %q:\n", len(mems), noun, query)
	}
	for i, m := range mems {
		entry := formatMemory(m)
		if b.Len()+len(entry) > MaxOutput {
			fmt.Fprintf(&b, "[output truncated: showed %d of %d memories; ask for fewer or search more narrowly]\n", i, len(mems))
			break
		}
		b.WriteString(entry)
	}
	return b.String()
}

func formatMemory(m Memory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n#%d", m.ID)
	if !m.CreatedAt.IsZero() {
		fmt.Fprintf(&b, " %s", m.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if m.Source != "" {
		fmt.Fprintf(&b, " by %s", m.Source)
	}
	if len(m.Tags) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(m.Tags, ", "))
	}
	b.WriteString("\n")
	b.WriteString(m.Content)
	b.WriteString("\n")
	return b.String()
}

// inferSchema infers the argument schema of T; it panics on a type with
// no schema, a programming error any test finds.
func inferSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("memory: infer schema: %v", err))
	}
	return s
}
