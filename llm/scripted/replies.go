package scripted

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/llm"
)

// noReply is what the model answers when no reply of its conversation
// holds for a request.
const noReply = "(The offline script has no reply for this request.)"

// compile compiles the condition's regexps.
func (w *When) compile() error {
	if w.Result != nil {
		w.result = make(map[string]*regexp.Regexp, len(w.Result))
		for field, pattern := range w.Result {
			re, err := regexp.Compile(pattern)
			if err != nil {
				return fmt.Errorf("when: result: %s: %w", field, err)
			}
			w.result[field] = re
		}
	}
	if w.Message != "" {
		re, err := regexp.Compile(w.Message)
		if err != nil {
			return fmt.Errorf("when: message: %w", err)
		}
		w.message = re
	}
	return nil
}

// arrived is what a request got since the model last spoke.
type arrived struct {
	// text is every new message's text and tool results, joined by
	// newlines.
	text string
	// result is the last new tool result (outside its untrusted label);
	// ok is false when none arrived.
	result string
	ok     bool
	// images describes the new image blocks, "image/png, 812 bytes
	// (A-…)" each, joined by "; " ("none" when there are none).
	images string
}

// newMessages reads the messages after the last assistant message.
func newMessages(msgs []llm.Message) arrived {
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			start = i + 1
			break
		}
	}
	var a arrived
	var parts, images []string
	for _, m := range msgs[start:] {
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockImage:
				images = append(images, fmt.Sprintf("%s, %d bytes (%s)", b.MediaType, len(b.ImageData), b.Ref))
			case llm.BlockText:
				parts = append(parts, b.Text)
			case llm.BlockToolResult:
				a.result, a.ok = unwrapResult(b.Content), true
				parts = append(parts, a.result)
			}
		}
	}
	a.text = strings.Join(parts, "\n")
	a.images = "none"
	if len(images) > 0 {
		a.images = strings.Join(images, "; ")
	}
	return a
}

// pickReply returns the first reply whose condition holds for a.
func pickReply(replies []Turn, a arrived) (Turn, bool) {
	for _, r := range replies {
		if r.When.holds(a) {
			return r, true
		}
	}
	return Turn{Text: noReply}, true
}

// holds reports whether the condition holds for what arrived; a nil
// condition always holds.
func (w *When) holds(a arrived) bool {
	if w == nil {
		return true
	}
	if w.result != nil {
		if !a.ok {
			return false
		}
		for field, re := range w.result {
			v, ok := resultField(a.result, field)
			if !ok || !re.MatchString(v) {
				return false
			}
		}
	}
	return w.message == nil || w.message.MatchString(a.text)
}

// resultField is a field of a tool result's JSON object, by dotted path:
// a string as is, any other value as JSON. ok is false when the result is
// not a JSON object or has no such field.
func resultField(result, path string) (string, bool) {
	var v any
	if err := json.Unmarshal([]byte(result), &v); err != nil {
		return "", false
	}
	for _, name := range strings.Split(path, ".") {
		obj, isObj := v.(map[string]any)
		if !isObj {
			return "", false
		}
		if v, isObj = obj[name]; !isObj {
			return "", false
		}
	}
	if s, isStr := v.(string); isStr {
		return s, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// template finds the placeholders a turn's text may hold.
var template = lazyre.New(`\{\{(input|images|last_result|result\.[A-Za-z0-9_.]+|match\.[A-Za-z0-9_]+)\}\}`)

// expand fills the templates of turn's text from the request's
// messages (see the package doc); an unknown placeholder stays as it is.
func expand(turn Turn, msgs []llm.Message) string {
	last := lastResult(msgs)
	var groups map[string]string
	if turn.When != nil && turn.When.message != nil {
		groups = namedGroups(turn.When.message, newMessages(msgs).text)
	}
	return template().ReplaceAllStringFunc(turn.Text, func(ph string) string {
		name := ph[2 : len(ph)-2]
		switch {
		case name == "input":
			return firstUserText(msgs)
		case name == "last_result":
			return last
		case name == "images":
			return newMessages(msgs).images
		case strings.HasPrefix(name, "result."):
			v, _ := resultField(last, strings.TrimPrefix(name, "result."))
			return v
		default:
			return groups[strings.TrimPrefix(name, "match.")]
		}
	})
}

// namedGroups are the named groups of re's first match in text.
func namedGroups(re *regexp.Regexp, text string) map[string]string {
	m := re.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for i, name := range re.SubexpNames() {
		if name != "" {
			out[name] = m[i]
		}
	}
	return out
}
