package main

import (
	"fmt"
	"strings"

	"github.com/avaagent/ava"
)

// sessionRule is the one rule for naming a session, stated in the help
// of every command that takes one.
const sessionRule = `Sessions: a session is named by one rule, the same for every command: a full
key as it is (ava:web:…, ava:telegram:…), a subagent ID S-xxxxxx (or a
prefix such as S-7f) for that subagent's session, or a bare name of
letters, digits, '-' and '.' (notes), which is the command line's session
ava:cli:notes. Anything else is refused (exit 2) before anything runs.`

// idHint is where a person finds the IDs and keys they may give.
const idHint = "ava ps --all lists the subagents and their IDs; a bare name such as notes is the session ava:cli:notes"

// sessionArg reads what the person typed for a session (an argument or
// --session) by the one rule (ava.ParseSessionKey) and returns its key. A
// mistake is a usage error (exit 2), returned before the command prints
// or opens anything.
func sessionArg(s string) (string, error) {
	key, err := ava.ParseSessionKey(s)
	if err != nil {
		return "", &exitError{code: 2, err: err, hint: idHint}
	}
	return key, nil
}

// mainSessionArg is sessionArg for a conversation with Ava (ava run and
// ava chat --session): a subagent's session is refused, as a usage error.
func mainSessionArg(flag, s string) (string, error) {
	key, err := sessionArg(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	if ava.IsSubagentKey(key) {
		return "", usageError(fmt.Errorf("%s %s: that is a subagent's session; a conversation is with Ava (talk to a subagent with ava send %s \"…\")", flag, s, subagentOf(key)))
	}
	return key, nil
}

// subagentArg reads a subagent argument (ava status) by the same rule
// and returns the subagent's ID (or prefix) as typed; a main session's
// name or key is a usage error.
func subagentArg(s string) (string, error) {
	key, err := sessionArg(s)
	if err != nil {
		return "", err
	}
	if !ava.IsSubagentKey(key) {
		return "", &exitError{code: 2, err: fmt.Errorf("%q is the session %s, not a subagent: give a subagent ID (S-xxxxxx, or a prefix such as S-7f)", s, key), hint: idHint}
	}
	return subagentOf(key), nil
}

// subagentOf is the subagent ID in a subagent's session key.
func subagentOf(key string) string { return key[strings.LastIndex(key, ":")+1:] }
