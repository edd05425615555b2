package llmfake

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/avaagent/ava/llm"
)

// promptCache plays Anthropic's prompt cache: the prefix up to each
// cache_control breakpoint is written; a later request whose prefix
// matches a written one up to a block boundary reads it.
type promptCache struct {
	// onBill, when set, hears each request's billed usage.
	onBill  func(Request, llm.Usage)
	min     int
	mu      sync.Mutex
	written map[[32]byte]bool
	billed  llm.Usage
}

// SimulatePromptCache makes an Anthropic fake report cache usage as the
// API does, from the request's cache_control breakpoints, whatever the
// turn's Usage says of input: the request's tokens (a token per 4 bytes
// of each tool, system block and content block) are cache reads up to
// the longest prefix an earlier request wrote, cache writes from there
// to its last breakpoint, and input after it. A prefix shorter than
// minTokens is not cached (the API's minimum: 1,024 to 4,096 tokens by
// model).
// onBill, when non-nil, hears each request and its billed usage.
func (s *Server) SimulatePromptCache(minTokens int, onBill func(Request, llm.Usage)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache = &promptCache{min: minTokens, written: map[[32]byte]bool{}, onBill: onBill}
}

// segment is one cacheable block of a request.
type segment struct {
	bytes  []byte
	tokens int
	mark   bool
}

// segments lists the request's blocks in cache order: tools, system,
// messages.
func segments(body map[string]any) []segment {
	var out []segment
	add := func(v any) {
		m, _ := v.(map[string]any)
		mark := m != nil && m["cache_control"] != nil
		if mark {
			c := make(map[string]any, len(m))
			for k, x := range m {
				if k != "cache_control" {
					c[k] = x
				}
			}
			v = c
		}
		b, _ := json.Marshal(v)
		out = append(out, segment{bytes: b, tokens: len(b)/4 + 1, mark: mark})
	}
	for _, t := range asList(body["tools"]) {
		add(t)
	}
	if sys, ok := body["system"].(string); ok {
		add(sys)
	}
	for _, b := range asList(body["system"]) {
		add(b)
	}
	for _, m := range asList(body["messages"]) {
		mm, _ := m.(map[string]any)
		add(mm["role"])
		if text, ok := mm["content"].(string); ok {
			add(text)
			continue
		}
		for _, b := range asList(mm["content"]) {
			add(b)
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// usage bills a request (its decoded body) and records the prefixes
// it writes; out is the turn's usage, whose output is kept.
func (c *promptCache) usage(req Request, out llm.Usage) llm.Usage {
	body := req.Body
	segs := segments(body)
	// Each prefix's key hashes its blocks (cache_control left out, so
	// marks may move) and the model: caches are per model.
	hashes := make([][32]byte, len(segs))
	h := sha256.New()
	model, _ := body["model"].(string)
	_, _ = h.Write([]byte(model + "\x00"))
	total, cum := 0, make([]int, len(segs))
	for i, sg := range segs {
		total += sg.tokens
		cum[i] = total
		_, _ = h.Write(sg.bytes)
		_, _ = h.Write([]byte{0})
		copy(hashes[i][:], h.Sum(nil))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	read, lastMark := 0, -1
	for i := range segs {
		if c.written[hashes[i]] {
			read = cum[i]
		}
		if segs[i].mark {
			lastMark = i
		}
	}
	write := 0
	if lastMark >= 0 && cum[lastMark] >= c.min && cum[lastMark] > read {
		write = cum[lastMark] - read
		for i := 0; i <= lastMark; i++ {
			if segs[i].mark && cum[i] >= c.min {
				c.written[hashes[i]] = true
			}
		}
	}
	u := llm.Usage{InputTokens: total - read - write, CacheReadTokens: read, CacheWriteTokens: write, OutputTokens: out.OutputTokens}
	c.billed = c.billed.Add(u)
	if c.onBill != nil {
		c.onBill(req, u)
	}
	return u
}

// Billed is the usage the prompt cache simulation reported so far, over
// every request (zero without SimulatePromptCache).
func (s *Server) Billed() llm.Usage {
	s.mu.Lock()
	c := s.cache
	s.mu.Unlock()
	if c == nil {
		return llm.Usage{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.billed
}
