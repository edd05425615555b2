package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// acceptedTimes lists the forms ParseTime accepts, for its error.
const acceptedTimes = `"1 hour ago", "30 minutes ago", "2 days ago", "30m", "1h", "2d", "1w", ` +
	`"now", "today", "yesterday", "2026-11-20", "2026-11-20 14:05", "2026-11-20 14:05:30", ` +
	`or RFC 3339 ("2026-11-20T14:05:30Z")`

// timeUnits maps unit words to durations.
var timeUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// localLayouts are date forms read in now's time zone.
var localLayouts = []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05",
	"2006-01-02T15:04", "2006-01-02T15:04:05"}

// ParseTime reads a --since/--until value relative to now: an age ("1
// hour ago", "30 minutes ago", "2 days ago", or short: "30m", "1h", "2d",
// "1w", "90s", also Go durations like "1h30m"), "now", "today" and
// "yesterday" (midnight in now's time zone), a date or date and time in
// now's time zone ("2026-11-20", "2026-11-20 14:05", "2026-11-20
// 14:05:30"), or RFC 3339 ("2026-11-20T14:05:30Z"). The error lists the
// accepted forms.
func ParseTime(s string, now time.Time) (time.Time, error) {
	in := strings.ToLower(strings.Join(strings.Fields(s), " "))
	switch in {
	case "now":
		return now, nil
	case "today":
		return midnight(now), nil
	case "yesterday":
		return midnight(now).AddDate(0, 0, -1), nil
	}
	if d, ok := parseAge(strings.TrimSuffix(in, " ago")); ok {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(in)); err == nil {
		return t, nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, strings.ToUpper(in), now.Location()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read time %q: use %s", s, acceptedTimes)
}

func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// parseAge reads "1 hour", "an hour", "30m", "2d" or a Go duration.
func parseAge(s string) (time.Duration, bool) {
	num, unit, spaced := strings.Cut(s, " ")
	if !spaced {
		i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if i <= 0 {
			return 0, false
		}
		num, unit = s[:i], s[i:]
	}
	if num == "a" || num == "an" {
		num = "1"
	}
	n, err := strconv.Atoi(num)
	if u, ok := timeUnits[unit]; ok && err == nil && n >= 0 && n < 1e6 {
		return time.Duration(n) * u, true
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 && !spaced {
		return d, true
	}
	return 0, false
}
