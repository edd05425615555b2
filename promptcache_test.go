package ava_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/llm/llmfake"
)

// The figures of docs/benchmarks.md ("Prompt caching"): billed input
// tokens of a ten-step subagent and of eight fork-mode subagents against
// a fake that bills the prompt cache as Anthropic does (a token per 4
// bytes; prefixes under 1,024 tokens not cached). "Without caching" is
// the same requests with every prompt token billed as input; the
// input-equivalent weighs cache writes at 1.25 and reads at 0.1, the
// API's rates.

// cacheFigures logs u's billed input and returns its input-equivalent.
func cacheFigures(t *testing.T, what string, u llm.Usage) float64 {
	t.Helper()
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	equiv := float64(u.InputTokens) + 1.25*float64(u.CacheWriteTokens) + 0.1*float64(u.CacheReadTokens)
	t.Logf("%s: prompt tokens %d; with caching: input %d, cache writes %d, cache reads %d = %.0f input-equivalent (%.0f%% of %d without caching)",
		what, prompt, u.InputTokens, u.CacheWriteTokens, u.CacheReadTokens, equiv, 100*equiv/float64(prompt), prompt)
	return equiv / float64(prompt)
}

func countResults(raw []byte) int { return strings.Count(string(raw), `"tool_result"`) }

func isSubagent(req llmfake.Request) bool {
	return strings.Contains(string(req.Raw), "You are a specialized")
}

func cachedRuntime(t *testing.T, fake *llmfake.Server) *ava.Runtime {
	t.Helper()
	return openTest(t, "turns:\n  - text: done\n", func(c *config.Config) {
		c.Anthropic = config.Provider{APIKey: "sk-ant-test", BaseURL: fake.URL}
		c.Model = "anthropic/claude-sonnet-4-5"
		c.MaxConcurrentSubagents = 10
		notes := strings.Repeat("A line of the notes the subagent reads, long enough to matter. ", 40)
		if err := os.WriteFile(filepath.Join(c.Workspace, "notes.txt"), []byte(notes), 0o600); err != nil {
			t.Fatal(err)
		}
	})
}

const answer = `{"summary":"ok","output":{"a":1},"confidence":0.9}`

// A subagent of ten model calls (nine file reads, then the answer)
// reads each call's prefix from the cache the call before wrote.
func TestPromptCacheTenStepSubagent(t *testing.T) {
	fake := llmfake.NewAnthropic(t)
	fake.SimulatePromptCache(1024, nil)
	fake.Respond = func(req llmfake.Request) llmfake.Turn {
		if countResults(req.Raw) >= 9 {
			return llmfake.Turn{Text: answer, Usage: llm.Usage{OutputTokens: 40}}
		}
		return llmfake.Turn{ToolCalls: []llmfake.ToolCall{{Name: "read_file", Args: `{"path":"notes.txt"}`}}, Usage: llm.Usage{OutputTokens: 20}}
	}
	rt := cachedRuntime(t, fake)
	ctx := testCtx(t)
	sp, err := rt.SpawnGroup(ctx, "", ava.GroupRequest{Mode: "parallel", Configs: []ava.SubagentConfig{{Role: "researcher", Task: "read the notes ten times"}}}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sp.Group.Wait(ctx)
	if err != nil || rs[0].Status != "success" || len(fake.Requests()) != 10 {
		t.Fatalf("run: %+v %v, %d requests", rs, err, len(fake.Requests()))
	}
	if share := cacheFigures(t, "ten-step subagent", fake.Billed()); share > 0.5 {
		t.Errorf("billed %.0f%% of the prompt with caching, want well under half", 100*share)
	}
}

// Eight fork-mode subagents of one role, spawned together by the
// orchestrator after a long conversation: the first to call writes
// the forked conversation to the cache, the others read it.
func TestPromptCacheEightForks(t *testing.T) {
	fake := llmfake.NewAnthropic(t)
	var (
		mu        sync.Mutex
		subagents llm.Usage
		forks     int
	)
	fake.SimulatePromptCache(1024, func(req llmfake.Request, u llm.Usage) {
		if isSubagent(req) {
			mu.Lock()
			subagents, forks = subagents.Add(u), forks+1
			mu.Unlock()
		}
	})
	var tasks []map[string]any
	for i := range 8 {
		tasks = append(tasks, map[string]any{"role": "researcher", "task": fmt.Sprintf("check part %d of the document", i+1), "context_mode": "fork"})
	}
	spawn, _ := json.Marshal(map[string]any{"mode": "parallel", "tasks": tasks})
	fake.Respond = func(req llmfake.Request) llmfake.Turn {
		switch {
		case isSubagent(req):
			return llmfake.Turn{Text: answer, Usage: llm.Usage{OutputTokens: 40}}
		case strings.Contains(string(req.Raw), "SPAWN NOW") && countResults(req.Raw) == 0:
			return llmfake.Turn{ToolCalls: []llmfake.ToolCall{{Name: "spawn_subagents", Args: string(spawn)}}, Usage: llm.Usage{OutputTokens: 60}}
		}
		return llmfake.Turn{Text: "Noted.", Usage: llm.Usage{OutputTokens: 5}}
	}
	rt := cachedRuntime(t, fake)
	ctx := testCtx(t)
	key := "ava:cli:cache"
	doc := strings.Repeat("A paragraph of the long document the person shared, to be checked in eight parts. ", 120)
	for _, msg := range []string{"Here is the document:\n" + doc, "SPAWN NOW: check it in eight parts, each from this conversation."} {
		turn, err := rt.Send(ctx, key, msg, ava.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := turn.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if forks != 8 {
		t.Fatalf("%d subagent requests, want 8", forks)
	}
	if share := cacheFigures(t, "eight fork-mode subagents", subagents); share > 0.5 {
		t.Errorf("billed %.0f%% of the prompt with caching, want well under half", 100*share)
	}
	cacheFigures(t, "the whole session (orchestrator and subagents)", fake.Billed())
	// The session's spend shows what was read from the cache: every
	// cached token the provider reported, the orchestrator's and the
	// subagents'.
	ss, err := rt.Session(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ss.Spend.Total.CachedTokens, fake.Billed().CacheReadTokens; got != want || got == 0 || ss.Spend.Subagents.CachedTokens == 0 {
		t.Errorf("session spend: %d cached tokens (subagents %d), the provider reported %d", got, ss.Spend.Subagents.CachedTokens, want)
	}
}

// A run's cost prices cache reads and writes at their own rates, from
// the usage each wire reports (Anthropic's cache_read_input_tokens and
// cache_creation_input_tokens; OpenAI's prompt_tokens_details with
// cached_tokens and OpenRouter's cache_write_tokens), and a cache write
// of a model whose price names no write rate at its input rate.
func TestCostPricesCachedTokens(t *testing.T) {
	u := llm.Usage{InputTokens: 1000, CacheWriteTokens: 2000, CacheReadTokens: 10000, OutputTokens: 100}
	for _, c := range []struct {
		name, model string
		serve       func(*testing.T) *llmfake.Server
		provider    func(c *config.Config, url string)
		want        float64
	}{
		// Sonnet 4.5: 300 in, 375 write, 30 read, 1500 out (¢ per M).
		{"anthropic", "anthropic/claude-sonnet-4-5", func(t *testing.T) *llmfake.Server { return llmfake.NewAnthropic(t) },
			func(c *config.Config, url string) { c.Anthropic = config.Provider{APIKey: "sk-ant-test", BaseURL: url} }, 1.5},
		// GPT-4.1: 200 in (and write), 50 read, 800 out.
		{"openai", "openai/gpt-4.1", func(t *testing.T) *llmfake.Server { return llmfake.NewOpenAI(t) },
			func(c *config.Config, url string) {
				c.OpenAI = config.Provider{APIKey: "sk-test", BaseURL: url + "/v1"}
			}, 1.18},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := c.serve(t)
			fake.Respond = func(llmfake.Request) llmfake.Turn { return llmfake.Turn{Text: answer, Usage: u} }
			rt := openTest(t, "turns:\n  - text: done\n", func(cfg *config.Config) { c.provider(cfg, fake.URL) })
			ctx := testCtx(t)
			sp, err := rt.SpawnGroup(ctx, "", ava.GroupRequest{Mode: "parallel", Configs: []ava.SubagentConfig{{Role: "researcher", Task: "x", Model: c.model, ModelBy: llm.NamedByOperator}}}, "", "")
			if err != nil {
				t.Fatal(err)
			}
			rs, err := sp.Group.Wait(ctx)
			if err != nil || rs[0].Status != "success" {
				t.Fatalf("run: %+v %v", rs, err)
			}
			if got := rs[0].CostCents; got < c.want-1e-9 || got > c.want+1e-9 {
				t.Errorf("cost %v¢, want %v¢", got, c.want)
			}
		})
	}
}
