package session

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/avaagent/ava/internal/lazyre"
)

// Session keys. Every key Ava makes is ava:<channel>:<id>: ava:web:<id>
// (the API), ava:cli:<id> and ava:chat:<id> (the command line),
// ava:telegram:<chat>, ava:mcp:<id>, and ava:subagent:S-xxxxxx, a
// subagent's own session, which only the subagent manager creates.
//
// A client may name a main session of its own (an integration mapping
// its chat IDs to sessions): its first message creates the session
// (Service.Send), as a LangGraph thread is created by its first run.
// Such a key must follow the grammar NewKeyPattern states, so that it
// names one session file of its own and can never be taken for a
// subagent's. Keys made before the grammar (ava run --session anything)
// still address their stored sessions: CheckKey is all an existing key
// must pass.

// MaxKeyLen bounds any session key, in bytes.
const MaxKeyLen = 200

// SubagentChannel is the channel of subagent sessions
// (ava:subagent:S-xxxxxx), reserved: no client may create one.
const SubagentChannel = "subagent"

// NewKeyPattern is the grammar of a key a new main session may be
// created under: "ava:", a channel of lowercase letters, digits and '-'
// (at most 32, starting with a letter), ':', and an ID of letters,
// digits, '-' and '.' in one or more parts joined by ':' (at most
// MaxNewIDLen in all, not starting with '.'), as Telegram's fresh
// sessions have it (ava:telegram:<chat>:<n>). No '_' and no other byte:
// audit.SanitizeName turns ':' into '_', so a key of the grammar never
// shares a session file with another.
const NewKeyPattern = `^ava:[a-z][a-z0-9-]{0,31}:[A-Za-z0-9-][A-Za-z0-9.-]*(:[A-Za-z0-9.-]+)*$`

// MaxNewIDLen bounds the ID part of a new session's key, in bytes.
const MaxNewIDLen = 128

var newKeyRE = lazyre.New(NewKeyPattern)

// NameChannel is the channel a bare session name is in: ParseKey reads
// "notes" as ava:cli:notes.
const NameChannel = "cli"

var (
	// subagentRefRE is a subagent ID or a prefix of one, as a person
	// types it: S- and one to six hex digits, any case.
	subagentRefRE = lazyre.New(`^[Ss]-[0-9A-Fa-f]{1,6}$`)
	// nameRE is a bare session name: the ID part of NewKeyPattern, in one
	// part (no ':').
	nameRE = lazyre.New(`^[A-Za-z0-9-][A-Za-z0-9.-]*$`)
)

// ParseKey reads what a person typed for a session (a command's argument
// or --session) by one rule, and returns the session's key:
//   - a key with ':' is taken as it is and must pass CheckKey
//     (ava:web:…, ava:subagent:S-7f3a2b, keys made before the grammar);
//   - S- and one to six hex digits is a subagent's ID or a prefix of one,
//     and names its session, ava:subagent:<what was typed>;
//   - any other bare name of letters, digits, '-' and '.' (not starting
//     with '.', at most MaxNewIDLen bytes) is a main session of the
//     command line, ava:cli:<name>.
//
// Anything else (empty, S- without hex digits, spaces, '_', …) is
// ErrBadKey saying the three forms, so that a caller refuses it before it
// prints or opens anything.
func ParseKey(s string) (string, error) {
	switch {
	case strings.TrimSpace(s) == "":
		return "", fmt.Errorf("%w: the subagent ID or session key is empty: give one (S-xxxxxx, a key such as ava:web:…, or a name such as notes)", ErrBadKey)
	case strings.Contains(s, ":"):
		if err := CheckKey(s); err != nil {
			return "", err
		}
		return s, nil
	case subagentRefRE().MatchString(s):
		return "ava:" + SubagentChannel + ":" + s, nil
	case len(s) >= 2 && strings.EqualFold(s[:2], "S-"):
		return "", fmt.Errorf("%w %q: a subagent ID is S- and six hex digits (S-7f3a2b, or a prefix such as S-7f); a session name may not start with S-", ErrBadKey, s)
	case nameRE().MatchString(s) && len(s) <= MaxNewIDLen:
		return "ava:" + NameChannel + ":" + s, nil
	}
	return "", fmt.Errorf("%w %q: give a session name of letters, digits, '-' and '.' (notes: the session ava:cli:notes), a full key (ava:web:…), or a subagent ID (S-7f3a2b)", ErrBadKey, s)
}

// ErrBadKey is a session key that no session has or may have (a
// client's mistake: HTTP 400).
var ErrBadKey = errors.New("bad session key")

// IsSubagentKey reports whether key is a subagent session's.
func IsSubagentKey(key string) bool { return strings.Contains(key, ":"+SubagentChannel+":") }

// CheckKey refuses a key that cannot name any session: empty, longer
// than MaxKeyLen, holding spaces or control characters, or a subagent
// key without an ID. A key that passes may still be unknown.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrBadKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: over %d bytes", ErrBadKey, MaxKeyLen)
	}
	for _, r := range key {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%w %q: spaces and control characters are not allowed", ErrBadKey, key)
		}
	}
	if IsSubagentKey(key) && emptySubagentID(key[strings.LastIndex(key, ":")+1:]) {
		return fmt.Errorf("%w %q: the subagent ID is empty (want ava:subagent:S-xxxxxx)", ErrBadKey, key)
	}
	return nil
}

// emptySubagentID reports a blank ID or the bare "S-".
func emptySubagentID(id string) bool {
	id = strings.TrimSpace(id)
	return id == "" || strings.EqualFold(id, "S-")
}

// CheckNewKey refuses a key a new main session may not be created
// under: one CheckKey refuses, a subagent key (those sessions are the
// subagent manager's), or one outside NewKeyPattern.
func CheckNewKey(key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if IsSubagentKey(key) {
		return fmt.Errorf("%w %q: ava:%s: keys are subagents' own sessions, made when a subagent starts; a message to one needs it to exist",
			ErrBadKey, key, SubagentChannel)
	}
	if !newKeyRE().MatchString(key) || len(newKeyID(key)) > MaxNewIDLen {
		return fmt.Errorf("%w %q: a new session's key is ava:<channel>:<id>: channel of a-z, 0-9 and '-' (up to 32, a letter first), id of A-Z, a-z, 0-9, '-' and '.', in parts joined by ':' (up to %d)",
			ErrBadKey, key, MaxNewIDLen)
	}
	return nil
}

// newKeyID is the ID part of a key of the grammar: what follows the
// channel.
func newKeyID(key string) string {
	_, id, _ := strings.Cut(strings.TrimPrefix(key, "ava:"), ":")
	return id
}
