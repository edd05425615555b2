package subagent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/agent"
)

// Role is a kind of subagent: its tools, default model, limits and
// system prompt.
type Role struct {
	Name        string
	Description string
	Tools       []string
	// Model is a model name or alias (haiku, sonnet, opus).
	Model            string
	Limits           agent.Limits
	ExtendedThinking bool
	// Prompt is extra instructions appended to the system prompt (a
	// custom role's Markdown body).
	Prompt string
	// Source is "built-in" or the role file's path.
	Source string
}

// Default limits of a subagent (seed 001, section 2.4).
const (
	DefaultTimeout       = 600 * time.Second
	DefaultMaxCostCents  = 50.0
	DefaultMaxTokens     = 100_000
	DefaultMaxIterations = 20
)

// DefaultLimits are the limits of a role that sets none.
var DefaultLimits = agent.Limits{Timeout: DefaultTimeout, MaxCostCents: DefaultMaxCostCents, MaxTokens: DefaultMaxTokens, MaxIterations: DefaultMaxIterations}

// Bounds on limits a role file or a spawn may ask for.
const (
	MaxTimeout       = 24 * time.Hour
	MaxCostCentsCap  = 100_000.0
	MaxTokensCap     = 100_000_000
	MaxIterationsCap = 1000
)

// WithheldReason says why a subagent never gets the tool name even when
// its role lists it, or "" when a subagent may have it: subagents never
// write memory, and never spawn or manage subagents.
func WithheldReason(name string) string {
	switch {
	case !slices.Contains(forbiddenTools, name):
		return ""
	case name == "memory_write":
		return "subagents never write memory"
	}
	return "subagents never spawn or manage subagents"
}

// BuiltinRoles are the four roles of seed 001 (sections 2.3, 2.4 and 5).
// Every role can read memory; none can write it or spawn subagents.
func BuiltinRoles() []Role {
	return []Role{
		{Name: "web_crawler", Description: "Deep web research: market research, competitive analysis, documentation gathering.",
			Tools: []string{"web_search", "http_get", "read_webpages", "python_exec", "memory_read"}, Model: "haiku",
			Limits: agent.Limits{Timeout: 600 * time.Second, MaxCostCents: 50, MaxTokens: DefaultMaxTokens, MaxIterations: DefaultMaxIterations}, Source: "built-in"},
		{Name: "code_reviewer", Description: "Code analysis, PR review, architecture analysis, test verification.",
			Tools: []string{"read_file", "search_codebase", "search_and_read", "run_bash", "memory_read"}, Model: "opus",
			Limits: agent.Limits{Timeout: 300 * time.Second, MaxCostCents: 100, MaxTokens: DefaultMaxTokens, MaxIterations: DefaultMaxIterations}, Source: "built-in"},
		{Name: "data_extractor", Description: "Scraping structured data, parsing documents, extracting metrics.",
			Tools: []string{"http_get", "read_webpages", "python_exec", "memory_read"}, Model: "haiku",
			Limits: DefaultLimits, Source: "built-in"},
		{Name: "researcher", Description: "General research combining the web and the local codebase.",
			Tools: []string{"web_search", "http_get", "read_webpages", "read_file", "search_codebase", "memory_read"}, Model: "sonnet",
			Limits: DefaultLimits, ExtendedThinking: true, Source: "built-in"},
	}
}

// roleFile is a custom role file's front matter.
type roleFile struct {
	Name             string   `yaml:"name"`
	Description      string   `yaml:"description"`
	Tools            []string `yaml:"tools"`
	Model            string   `yaml:"model"`
	Timeout          string   `yaml:"timeout"`
	MaxCostCents     *float64 `yaml:"max_cost_cents"`
	MaxTokens        *int     `yaml:"max_tokens"`
	MaxIterations    *int     `yaml:"max_iterations"`
	ExtendedThinking bool     `yaml:"extended_thinking"`
}

// RoleError is a role file that could not be loaded.
type RoleError struct {
	Path string
	Line int
	Err  error
}

func (e *RoleError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *RoleError) Unwrap() error { return e.Err }

var roleName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// ParseRole reads one role file. known says whether a tool name exists.
func ParseRole(path string, data []byte, known func(string) bool) (Role, error) {
	front, body, err := splitFrontMatter(data)
	if err != nil {
		return Role{}, &RoleError{Path: path, Line: 1, Err: err}
	}
	var rf roleFile
	dec := yaml.NewDecoder(bytes.NewReader(front))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		return Role{}, &RoleError{Path: path, Line: yamlLine(err) + 1, Err: fmt.Errorf("front matter: %w", err)}
	}
	line := func(key string) int { return keyLine(front, key) + 1 }
	if !roleName.MatchString(rf.Name) {
		return Role{}, &RoleError{Path: path, Line: line("name"), Err: fmt.Errorf("name %q: use lowercase letters, digits, _ or -, starting with a letter", rf.Name)}
	}
	if len(rf.Tools) == 0 {
		return Role{}, &RoleError{Path: path, Line: line("tools"), Err: errors.New("tools: a role needs at least one tool")}
	}
	for _, t := range rf.Tools {
		if !known(t) {
			return Role{}, &RoleError{Path: path, Line: line("tools"), Err: fmt.Errorf("tools: unknown tool %q", t)}
		}
	}
	r := Role{Name: rf.Name, Description: rf.Description, Tools: rf.Tools, Model: rf.Model, Limits: DefaultLimits,
		ExtendedThinking: rf.ExtendedThinking, Prompt: strings.TrimSpace(string(body)), Source: path}
	if r.Model == "" {
		r.Model = "sonnet"
	}
	if err := applyRoleLimits(&r, rf, line); err != nil {
		return Role{}, &RoleError{Path: path, Line: err.line, Err: err.err}
	}
	return r, nil
}

type lineErr struct {
	line int
	err  error
}

func applyRoleLimits(r *Role, rf roleFile, line func(string) int) *lineErr {
	if rf.Timeout != "" {
		d, err := parseSeconds(rf.Timeout)
		if err != nil || d <= 0 || d > MaxTimeout {
			return &lineErr{line("timeout"), fmt.Errorf("timeout %q: want a duration between 1s and %s (e.g. 300 or 5m)", rf.Timeout, MaxTimeout)}
		}
		r.Limits.Timeout = d
	}
	if v := rf.MaxCostCents; v != nil {
		if *v <= 0 || *v > MaxCostCentsCap {
			return &lineErr{line("max_cost_cents"), fmt.Errorf("max_cost_cents %v: want more than 0 and at most %v", *v, MaxCostCentsCap)}
		}
		r.Limits.MaxCostCents = *v
	}
	if v := rf.MaxTokens; v != nil {
		if *v <= 0 || *v > MaxTokensCap {
			return &lineErr{line("max_tokens"), fmt.Errorf("max_tokens %d: want 1 to %d", *v, MaxTokensCap)}
		}
		r.Limits.MaxTokens = *v
	}
	if v := rf.MaxIterations; v != nil {
		if *v <= 0 || *v > MaxIterationsCap {
			return &lineErr{line("max_iterations"), fmt.Errorf("max_iterations %d: want 1 to %d", *v, MaxIterationsCap)}
		}
		r.Limits.MaxIterations = *v
	}
	return nil
}

// parseSeconds reads "300" as seconds, or a Go duration ("5m").
func parseSeconds(s string) (time.Duration, error) {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err == nil && fmt.Sprint(n) == s {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(s)
}

// splitFrontMatter splits "---\nyaml\n---\nbody".
func splitFrontMatter(data []byte) (front, body []byte, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return nil, nil, errors.New("a role file starts with a '---' line, then YAML front matter, then '---'")
	}
	var fm bytes.Buffer
	n := 1
	for sc.Scan() {
		n++
		if strings.TrimSpace(sc.Text()) == "---" {
			rest := data[offsetOfLine(data, n):]
			return fm.Bytes(), rest, nil
		}
		fm.WriteString(sc.Text())
		fm.WriteByte('\n')
	}
	return nil, nil, errors.New("front matter is not closed by a '---' line")
}

// offsetOfLine returns the byte offset just after line n (1-based).
func offsetOfLine(data []byte, n int) int {
	off := 0
	for i := 0; i < n; i++ {
		j := bytes.IndexByte(data[off:], '\n')
		if j < 0 {
			return len(data)
		}
		off += j + 1
	}
	return off
}

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

// yamlLine extracts the front matter line from a YAML error (0 if none).
func yamlLine(err error) int {
	m := yamlLineRe.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	var n int
	fmt.Sscanf(m[1], "%d", &n)
	return n
}

// keyLine finds the line of a top-level key in the front matter (1-based
// within it, so +1 gives the file line), or 0.
func keyLine(front []byte, key string) int {
	for i, l := range strings.Split(string(front), "\n") {
		if strings.HasPrefix(l, key+":") {
			return i + 1
		}
	}
	return 0
}

// LoadRoles returns the built-in roles plus every custom role found in
// dirs (later dirs override earlier ones and built-ins of the same name),
// and an error for each role file that could not be loaded; the other
// roles still load.
func LoadRoles(dirs []string, known func(string) bool) (map[string]Role, []error) {
	roles := map[string]Role{}
	for _, r := range BuiltinRoles() {
		roles[r.Name] = r
	}
	var errs []error
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.md"))
		if err != nil {
			errs = append(errs, fmt.Errorf("roles in %s: %w", dir, err))
			continue
		}
		sort.Strings(paths)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				errs = append(errs, &RoleError{Path: p, Err: err})
				continue
			}
			r, err := ParseRole(p, data, known)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			roles[r.Name] = r
		}
	}
	return roles, errs
}

// SortedRoles lists roles by name.
func SortedRoles(m map[string]Role) []Role {
	out := make([]Role, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
