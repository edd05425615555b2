package ava_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/avaagent/ava"
	"github.com/avaagent/ava/config"
)

// exampleConfig is a configuration for the examples: a data root of its
// own, and a scripted model (the offline model's engine, replaying the
// script) so that they run without a provider or a network. A program of
// your own loads its configuration with config.Load(os.Getenv) instead,
// and names a real model (AVA_MODEL, a provider key).
func exampleConfig(script string) config.Config {
	dir, err := os.MkdirTemp("", "ava-example-")
	if err != nil {
		log.Fatal(err)
	}
	exampleDirs = append(exampleDirs, dir)
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		log.Fatal(err)
	}
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AVA_DATA_ROOT": filepath.Join(dir, "data"), "AVA_WORKSPACE": dir,
			"AVA_MODEL": "scripted/" + path, "AVA_CONFIRM": "never"}[k]
	})
	if err != nil {
		log.Fatal(err)
	}
	// A role's "sonnet" is the script too (only the operator, here the
	// program, may name a scripted model).
	cfg.Aliases = map[string]map[string]string{"scripted": {"haiku": path, "sonnet": path, "opus": path}}
	return cfg
}

// exampleDirs are the examples' folders, removed by TestMain.
var exampleDirs []string

// quiet is a logger for the examples: their output is what they print.
var quiet = slog.New(slog.DiscardHandler)

// Spawn a subagent and wait for its result.
func Example() {
	ctx := context.Background()
	rt, err := ava.Open(ctx, ava.Options{Config: exampleConfig(`turns:
  - text: "Podcast transcription costs about 0.6 cents a minute."
`), Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	spawned, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{
		Role: "researcher", Task: "Find what podcast transcription costs"}})
	if err != nil {
		log.Fatal(err)
	}
	sa, err := rt.Wait(ctx, spawned.Subagent.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sa.Status)
	fmt.Println(sa.Result.Summary)
	// Output:
	// success
	// Podcast transcription costs about 0.6 cents a minute.
}

// Send a message to a session and follow its events as they stream.
func ExampleRuntime_Chat() {
	ctx := context.Background()
	rt, err := ava.Open(ctx, ava.Options{Config: exampleConfig(`turns:
  - text: "Hello! How can I help?"
`), Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	key, err := rt.NewSession(ctx, "example")
	if err != nil {
		log.Fatal(err)
	}
	turn, events, err := rt.Chat(ctx, key, "hi", ava.SendOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer events.Close()
	for ended := false; !ended; {
		evs, err := events.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Seq > 0 && !ended { // kept events; live-only ones (text deltas) have none
				fmt.Println(ev.Seq, ev.Type)
			}
			ended = ended || ev.Type == ava.SessionEnd
		}
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("answer:", res.Text)
	// Output:
	// 1 SessionState
	// 2 SessionStart
	// 3 UserMessage
	// 4 CostUpdate
	// 5 AssistantMessage
	// 6 SessionEnd
	// answer: Hello! How can I help?
}

// Give the subagents a tool of your own, and a role that uses it.
func ExampleOptions_tools() {
	ctx := context.Background()
	type priceArgs struct {
		Service string `json:"service" jsonschema:"the service to price"`
	}
	prices := ava.NewTool("price_list", "Look up a service's price per minute in our price list.",
		func(_ context.Context, a priceArgs) (ava.ToolResult, error) {
			if strings.EqualFold(a.Service, "transcription") {
				return ava.ToolResult{Output: "transcription: 0.6 cents a minute"}, nil
			}
			return ava.ToolResult{Output: "no price for " + a.Service, IsError: true}, nil
		})
	analyst := ava.Role{Name: "pricing", Description: "Answers pricing questions from our price list.",
		Tools: []string{"price_list"}, Model: "sonnet", Prompt: "Use price_list; quote it exactly."}
	rt, err := ava.Open(ctx, ava.Options{Config: exampleConfig(`turns:
  - tool_calls:
      - name: price_list
        args: {service: transcription}
  - text: "Our price: {{last_result}}"
`), Logger: quiet, Tools: []ava.Tool{prices}, Roles: []ava.Role{analyst}})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	spawned, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "pricing", Task: "What does transcription cost?"}})
	if err != nil {
		log.Fatal(err)
	}
	sa, err := rt.Wait(ctx, spawned.Subagent.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sa.Role, sa.Status)
	fmt.Println(sa.Result.Summary)
	// Output:
	// pricing success
	// Our price: transcription: 0.6 cents a minute
}

// Observe runs as they start and end: any number of observers, each on
// a queue of its own, never slowing a run.
func ExampleRuntime_Observe() {
	ctx := context.Background()
	rt, err := ava.Open(ctx, ava.Options{Config: exampleConfig(`turns:
  - text: "done"
    usage: {input: 100, output: 20}
`), Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	ended := make(chan ava.RunEnded, 1)
	remove := rt.Observe(ava.Observer{
		RunEnded: func(_ context.Context, n ava.RunEnded) { ended <- n },
	})
	defer remove()

	if _, err := rt.Spawn(ctx, ava.SpawnRequest{Config: ava.SubagentConfig{Role: "researcher", Task: "anything"}}); err != nil {
		log.Fatal(err)
	}
	n := <-ended
	fmt.Println(n.Role, n.Status, n.Tokens, "tokens")
	// Output:
	// researcher success 120 tokens
}

// Serve Ava from an HTTP server of your own: each request is a turn of
// the caller's session.
func Example_httpServer() {
	ctx := context.Background()
	rt, err := ava.Open(ctx, ava.Options{Config: exampleConfig(`turns:
  - text: "Hello from Ava."
`), Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("POST /ask/{user}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		key := "ava:myapp:" + r.PathValue("user")
		turn, err := rt.Send(r.Context(), key, string(body), ava.SendOptions{Queue: true})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		res, err := turn.Wait(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, res.Text)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/ask/ann", "text/plain", strings.NewReader("hello"))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Print(string(answer))
	// Output:
	// Hello from Ava.
}
