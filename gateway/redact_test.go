package gateway_test

import (
	"strings"
	"testing"

	"github.com/avaagent/ava/gateway/client"
)

// sseSecrets are planted in the orchestrator's answer and the user's
// message (made up, in real formats).
var sseSecrets = []string{
	"ghp_16C7e42F292c6912E7710c838347Ae178B4a",
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"MIIEowIBAAKCAQEA0Z3VS5JJcds3xfnygWyF8PbnGy0AHB7MbmfsR3s",
	"hunter2-db-pw",
	"AKIAIOSFODNN7EXAMPLE",
}

// TestSSEStreamsCarryNoSecret streams an answer that holds secrets, cut
// into deltas by the scripted model, over SSE: no event the client
// receives holds one, streamed text included.
func TestSSEStreamsCarryNoSecret(t *testing.T) {
	answer := "token " + sseSecrets[0] + " jwt " + sseSecrets[1] +
		"\\n-----BEGIN RSA PRIVATE KEY-----\\n" + sseSecrets[2] + "\\n-----END RSA PRIVATE KEY-----\\n" +
		"db postgres://ava:" + sseSecrets[3] + "@db/ava and " + sseSecrets[4]
	e := newEnv(t, envOptions{script: `conversations:
  - match: "SECRETS"
    turns:
      - text: "` + answer + `"
`})
	_, evs, res := e.chat(client.ChatRequest{Message: "SECRETS: my key is " + sseSecrets[4]})
	if len(evs) == 0 {
		t.Fatalf("no events (result %+v)", res)
	}
	var deltas int
	for _, ev := range evs {
		if ev.Type == "TextDelta" {
			deltas++
		}
		for _, s := range sseSecrets {
			if strings.Contains(string(ev.Data), s) {
				t.Errorf("SSE %s event #%d holds %.12s…: %s", ev.Type, ev.ID, s, ev.Data)
			}
		}
	}
	if deltas == 0 {
		t.Error("no streamed text seen")
	}
}
