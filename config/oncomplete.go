package config

import (
	"fmt"
	"strings"
)

// OnComplete says what a session does when the background subagents it
// started have all ended (on_complete, AVA_ON_COMPLETE).
type OnComplete string

// What a session does when its background subagents have ended.
const (
	// Summarize runs one orchestrator turn of its own that reports the
	// results to the person: a synthesis, with what failed and why.
	Summarize OnComplete = "summarize"
	// Announce posts the results to the person as they are, without a
	// model call.
	Announce OnComplete = "announce"
	// Quiet keeps the results in the history for the person's next
	// message, and says nothing by itself.
	Quiet OnComplete = "quiet"
)

// ParseOnComplete checks a setting's value; "" is Summarize.
func ParseOnComplete(s string) (OnComplete, error) {
	switch v := OnComplete(strings.ToLower(strings.TrimSpace(s))); v {
	case "":
		return Summarize, nil
	case Summarize, Announce, Quiet:
		return v, nil
	}
	return "", fmt.Errorf("on_complete (AVA_ON_COMPLETE): %q, use summarize (Ava reports the results by itself), announce (posts them as they are) or quiet (says nothing until your next message)", s)
}
