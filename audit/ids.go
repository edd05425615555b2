package audit

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/avaagent/ava/event"
)

// dayLayout is the layout of daily log file names (UTC dates).
const dayLayout = "2006-01-02"

// IsSubagentID reports whether s is a subagent ID: "S-" and six lowercase
// hexadecimal characters.
func IsSubagentID(s string) bool {
	if len(s) != 8 || !strings.HasPrefix(s, "S-") {
		return false
	}
	for _, c := range []byte(s[2:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// LogDir is the directory of the daily audit logs.
func LogDir(root string) string { return filepath.Join(root, "logs", "ava") }

// TraceDir is the directory of the subagent traces.
func TraceDir(root string) string { return filepath.Join(root, "logs", "subagents") }

// SessionDir is the directory of the session files.
func SessionDir(root string) string { return filepath.Join(root, "sessions") }

// OutputDir is the directory of large outputs referenced by lifecycle
// entries.
func OutputDir(root string) string { return filepath.Join(root, "sessions", "outputs") }

// DailyPath is the daily audit log holding events of t's UTC date.
func DailyPath(root string, t time.Time) string {
	return filepath.Join(LogDir(root), t.UTC().Format(dayLayout)+".jsonl")
}

// TracePath is the trace file of subagent id.
func TracePath(root, id string) string { return filepath.Join(TraceDir(root), id+".jsonl") }

// SessionPath is the session file of the session key, named by
// [SanitizeName].
func SessionPath(root, session string) string {
	return filepath.Join(SessionDir(root), SanitizeName(session)+".jsonl")
}

// SanitizeName turns a session key or job ID into a safe file name: every
// byte other than ASCII letters, digits, '-', '_' and '.' becomes '_' (so
// "ava:subagent:S-7f3a2b" is "ava_subagent_S-7f3a2b"), a leading '.'
// becomes '_' (no hidden files, no ".."), an empty name is "_", and names
// are cut to 200 bytes. Distinct keys that differ only in replaced bytes
// share a file; Ava's keys (letters, digits, ':', '-') never do.
func SanitizeName(s string) string {
	b := []byte(s)
	if len(b) > 200 {
		b = b[:200]
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok || i == 0 && c == '.' {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// typeAliases maps extra lower-case names accepted by [ParseType].
var typeAliases = map[string]event.Type{
	"thinking": event.ExtendedThinking,
	"errors":   event.Error,
	"cost":     event.CostUpdate,
}

// ParseType reads an audit event type case-insensitively ("error",
// "toolcall", "ToolCall"; also "thinking" and "cost").
func ParseType(s string) (event.Type, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, t := range event.AuditTypes {
		if strings.ToLower(string(t)) == name {
			return t, nil
		}
	}
	if t, ok := typeAliases[name]; ok {
		return t, nil
	}
	names := make([]string, len(event.AuditTypes))
	for i, t := range event.AuditTypes {
		names[i] = string(t)
	}
	return "", fmt.Errorf("unknown event type %q: use one of %s (any case)", s, strings.Join(names, ", "))
}

// ParseTypes reads a list of types, each of which may hold several
// separated by commas ("error,toolcall"). Duplicates are dropped.
func ParseTypes(list []string) ([]event.Type, error) {
	var out []event.Type
	seen := map[event.Type]bool{}
	for _, item := range list {
		for part := range strings.SplitSeq(item, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			t, err := ParseType(part)
			if err != nil {
				return nil, err
			}
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}
