package subagent

import (
	"fmt"
	"time"

	"github.com/avaagent/ava/internal/money"
	"github.com/avaagent/ava/lifecycle"
)

// String is the status in one plain line, for the orchestrator's tools
// (what people see is rendered by the channels):
// "S-7f3a2b web_crawler running 45s, 12034 tokens, 3.10¢: reading …"
// (the cost as internal/money writes it).
func (st RunStatus) String() string {
	status := string(st.Status)
	switch {
	case st.Stalled:
		status += " (stalled)"
	case st.Status == lifecycle.Queued && st.QueuePosition > 0:
		status += fmt.Sprintf(" (#%d in line for a slot)", st.QueuePosition)
	}
	line := fmt.Sprintf("%s %s %s %s, %d tokens, %s", st.ID, st.Role, status,
		st.Elapsed.Round(time.Second), st.Tokens, money.Spend(st.CostCents, st.Tokens, false))
	if st.Activity != "" && !st.Status.Final() {
		line += ": " + st.Activity
	}
	return line
}
