package subagent

import (
	"fmt"
	"time"
)

// String is the status in one plain line, for the orchestrator's tools
// (what people see is rendered by the channels):
// "S-7f3a2b web_crawler running 45s, 12034 tokens, 3.1¢: reading …".
func (st RunStatus) String() string {
	status := string(st.Status)
	if st.Stalled {
		status += " (stalled)"
	}
	line := fmt.Sprintf("%s %s %s %s, %d tokens, %.1f¢", st.ID, st.Role, status,
		st.Elapsed.Round(time.Second), st.Tokens, st.CostCents)
	if st.Activity != "" && !st.Status.Final() {
		line += ": " + st.Activity
	}
	return line
}
