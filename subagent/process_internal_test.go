package subagent

import (
	"encoding/json"
	"testing"
	"time"
)

// How long a call will likely run: its declared timeout, a sleep, a known
// long-runner at the tool's default timeout, or nothing.
func TestProcessEstimate(t *testing.T) {
	for _, tc := range []struct {
		args string
		want float64
	}{
		{`{"command":"ls -l"}`, 0},
		{`{"command":"ls","timeout_seconds":90}`, 90},
		{`{"command":"sleep 59"}`, 59},
		{`{"command":"sleep 2m && echo hi"}`, 120},
		{`{"code":"import time\ntime.sleep(75)"}`, 75},
		{`{"command":"sudo apt-get install -y jq"}`, 60},
		{`{"command":"cd x && npm ci"}`, 60},
		{`{"command":"go build ./..."}`, 60},
		{`{"command":"git clone https://example.com/r"}`, 60},
		{`{"command":"echo make"}`, 0},
		{`not json`, 0},
	} {
		if got, why := processEstimate(json.RawMessage(tc.args), time.Minute); got != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.args, got, why, tc.want)
		}
	}
}
