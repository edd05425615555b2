package record

import (
	"fmt"
	"math"

	"github.com/avaagent/ava/event"
)

// EventLine validates an event to append (its session key, its sequence
// number within int64) and returns it as the JSON line stored.
func EventLine(ev event.Event) (string, error) {
	if err := CheckKey("event session", ev.Session); err != nil {
		return "", fmt.Errorf("append event: %w", err)
	}
	if ev.Seq == 0 || ev.Seq > math.MaxInt64 {
		return "", fmt.Errorf("append event to %s: sequence number %d is out of range", ev.Session, ev.Seq)
	}
	line, err := ev.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("append event to %s: %w", ev.Session, err)
	}
	return string(line), nil
}
