package audit

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	now := time.Date(2026, 11, 20, 14, 5, 30, 0, paris)
	for in, want := range map[string]time.Time{
		"1 hour ago":                  now.Add(-time.Hour),
		"30 minutes ago":              now.Add(-30 * time.Minute),
		"2 days ago":                  now.Add(-48 * time.Hour),
		"an hour ago":                 now.Add(-time.Hour),
		"  5   Mins  ago ":            now.Add(-5 * time.Minute),
		"1 week ago":                  now.Add(-7 * 24 * time.Hour),
		"1 hour":                      now.Add(-time.Hour),
		"30m":                         now.Add(-30 * time.Minute),
		"1h":                          now.Add(-time.Hour),
		"2d":                          now.Add(-48 * time.Hour),
		"90s":                         now.Add(-90 * time.Second),
		"1h30m":                       now.Add(-90 * time.Minute),
		"now":                         now,
		"today":                       time.Date(2026, 11, 20, 0, 0, 0, 0, paris),
		"Yesterday":                   time.Date(2026, 11, 19, 0, 0, 0, 0, paris),
		"2026-11-18":                  time.Date(2026, 11, 18, 0, 0, 0, 0, paris),
		"2026-11-18 14:05":            time.Date(2026, 11, 18, 14, 5, 0, 0, paris),
		"2026-11-18 14:05:09":         time.Date(2026, 11, 18, 14, 5, 9, 0, paris),
		"2026-11-18T14:05":            time.Date(2026, 11, 18, 14, 5, 0, 0, paris),
		"2026-11-18T14:05:09Z":        time.Date(2026, 11, 18, 14, 5, 9, 0, time.UTC),
		"2026-11-18t14:05:09z":        time.Date(2026, 11, 18, 14, 5, 9, 0, time.UTC),
		"2026-11-18T14:05:09.5+02:00": time.Date(2026, 11, 18, 12, 5, 9, 500_000_000, time.UTC),
	} {
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "1 fortnight ago", "-1h", "2026-13-01", "ten minutes ago", "14:05"} {
		_, err := ParseTime(in, now)
		if err == nil || !strings.Contains(err.Error(), `"1 hour ago"`) || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("ParseTime(%q): %v, want an error listing the accepted forms", in, err)
		}
	}
}
