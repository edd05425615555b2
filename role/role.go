// Package role is what a kind of subagent is: the Role type, the
// built-in roles, parsing and loading role files (the data root's and a
// workspace's), and the workspace gate that clamps a role file the
// person has not trusted (gate.go). It holds no state: the subagent
// runtime takes the loaded roles as a map.
package role

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/avaagent/ava/agent"
	"github.com/avaagent/ava/hookspec"
	"github.com/avaagent/ava/internal/fsread"
	"github.com/avaagent/ava/internal/lazyre"
	"github.com/avaagent/ava/internal/yamlerr"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/mcpspec"
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
	// Network lets the role's process tools (run_bash, python_exec) reach
	// the network, only through the sandbox's egress proxy (public
	// addresses, AVA_EGRESS_ALLOW); off by default: the web tools fetch.
	Network bool
	// ReadOnlyWorkspace makes the workspace read-only to the role's
	// process tools.
	ReadOnlyWorkspace bool
	// MaxUses caps the provider's web searches (and, apart, its web
	// fetches) in one model call, where the role's web_search is the
	// provider's (docs/research.md); 0 means DefaultSearchMaxUses.
	MaxUses int
	// RequiredOutput lists the fields the role's structured output must
	// have: a final answer without them ends the run error
	// (empty_result), never success.
	RequiredOutput []string
	// Resume lets a run of the role that a crash or a deploy interrupted
	// be resumed from its last checkpoint by the next process (at most
	// AVA_RESUME_ATTEMPTS times); otherwise it stays interrupted and its
	// parent is told. On for the built-in roles without process tools
	// (run_bash, python_exec), off for the others; a custom role is off
	// unless its front matter says `resume: true`.
	Resume bool
	// NoShare keeps the role off its group's board: run in a parallel
	// group or a chain, it gets neither post_finding nor read_findings,
	// nor the findings of the steps before it (a role file's
	// `share: false`; docs/sharing.md). Every role shares by default.
	NoShare bool
	// MCPServers are the role's MCP servers: a name of a server of the
	// config file, or a definition of the role's own (mcpspec.Spec).
	// Their tools are the role's too, named <server>__<tool>.
	MCPServers []mcpspec.Spec
	// Hooks are the role's own lifecycle hooks: they hear the events of
	// this role's subagents only (subagent:*, question), besides the
	// config file's hooks. Only a role file of the data root may have
	// them (see ErrWorkspaceHooks).
	Hooks []hookspec.Spec
	// Prompt is extra instructions appended to the system prompt (a
	// custom role's Markdown body).
	Prompt string
	// Source is "built-in" or the role file's path.
	Source string
	// Overrides is the Source of the role of the same name this one
	// replaced ("" when it replaced none).
	Overrides string
	// ModelBy is who named Model: the operator for the built-in roles
	// and the data root's role files, anyone else for a workspace's
	// (llm.Namer: only the operator may name a scripted model).
	ModelBy llm.Namer
	// Untrusted marks a role from a workspace file the person has not
	// trusted (or that changed since): it was clamped by the workspace
	// gate (workspace.go), UntrustedWhy says why it is untrusted and
	// Withheld what was taken from it or lowered.
	Untrusted    bool
	UntrustedWhy string
	Withheld     []string
}

// DefaultSearchMaxUses is a role's cap on the provider's searches in one
// model call when its file sets none: with Anthropic's $10 per 1,000
// searches, 5¢ a call at most.
const DefaultSearchMaxUses = 5

// MaxSearchMaxUses bounds the max_uses a role file may ask for.
const MaxSearchMaxUses = 50

// SearchMaxUses is the role's cap on the provider's searches in one
// model call.
func (r Role) SearchMaxUses() int {
	if r.MaxUses > 0 {
		return r.MaxUses
	}
	return DefaultSearchMaxUses
}

// BuiltinSource is the Source of a built-in role.
const BuiltinSource = "built-in"

// defaultRoleModel is the model of a role file that names none.
const defaultRoleModel = "sonnet"

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

// forbiddenTools are never given to a subagent, whatever its role says.
var forbiddenTools = []string{"spawn_subagent", "spawn_subagents", "subagent_status", "list_subagents", "cancel_subagent", "memory_write"}

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

// Builtin are the four roles of seed 001 (sections 2.3, 2.4 and 5),
// reviewed against the lethal trifecta (docs/security.md): the roles that
// read the web do not read memory, so a page's instructions find no
// private notes to send out; code_reviewer, whose process tools have no
// network in the sandbox, keeps memory_read. None can write memory or
// spawn subagents.
//
// Resume is on for the roles with no process tools (researcher).
func Builtin() []Role {
	roles := []Role{
		{Name: "web_crawler", Description: "Deep web research: market research, competitive analysis, documentation gathering.",
			Tools: []string{"web_search", "http_get", "read_webpages", "python_exec"}, Model: "haiku",
			Limits: agent.Limits{Timeout: 600 * time.Second, MaxCostCents: 50, MaxTokens: DefaultMaxTokens, MaxIterations: DefaultMaxIterations}, Source: BuiltinSource},
		{Name: "code_reviewer", Description: "Code analysis, PR review, architecture analysis, test verification.",
			Tools: []string{"read_file", "search_codebase", "search_and_read", "run_bash", "memory_read"}, Model: "opus",
			Limits:            agent.Limits{Timeout: 300 * time.Second, MaxCostCents: 100, MaxTokens: DefaultMaxTokens, MaxIterations: DefaultMaxIterations},
			ReadOnlyWorkspace: true, Source: BuiltinSource},
		{Name: "data_extractor", Description: "Scraping structured data, parsing documents, extracting metrics.",
			Tools: []string{"http_get", "read_webpages", "python_exec"}, Model: "haiku",
			Limits: DefaultLimits, Source: BuiltinSource},
		{Name: "researcher", Description: "General research combining the web and the local codebase.",
			Tools: []string{"web_search", "http_get", "read_webpages", "read_file", "search_codebase"}, Model: "sonnet",
			Limits: DefaultLimits, ExtendedThinking: true, Source: BuiltinSource},
	}
	for i := range roles {
		roles[i].Resume = !slices.ContainsFunc(roles[i].Tools, isProcessTool)
		roles[i].ModelBy = llm.NamedByOperator
	}
	return roles
}

// isProcessTool reports whether a tool runs processes in the workspace:
// the side effects a resumed run cannot see, so roles with one do not
// resume by default.
func isProcessTool(name string) bool { return name == "run_bash" || name == "python_exec" }

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
	Network          bool     `yaml:"network"`
	ReadOnly         bool     `yaml:"read_only_workspace"`
	RequiredOutput   []string `yaml:"required_output"`
	Resume           bool     `yaml:"resume"`
	Share            *bool    `yaml:"share"`
	// MaxUses caps the provider's searches per model call.
	MaxUses *int `yaml:"max_uses"`
	// MCPServers: a list of server names (from config.yaml) or
	// definitions (name, command, args, env, pass_env, url).
	MCPServers mcpspec.Specs `yaml:"mcp_servers"`
	// Hooks: lifecycle hooks of the role's subagents (data root only).
	Hooks []hookspec.Spec `yaml:"hooks"`
}

// FileError is a role file that could not be loaded.
type FileError struct {
	Path string
	Line int
	Err  error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

var roleName = lazyre.New(`^[a-z][a-z0-9_-]{0,63}$`)

// Parse reads one role file. known says whether a tool name exists.
func Parse(path string, data []byte, known func(string) bool) (Role, error) {
	front, body, err := splitFrontMatter(data)
	if err != nil {
		return Role{}, &FileError{Path: path, Line: 1, Err: err}
	}
	var rf roleFile
	if err := yamlerr.Decode(front, &rf); err != nil {
		return Role{}, frontMatterError(path, err)
	}
	line := func(key string) int { return keyLine(front, key) + 1 }
	if !roleName().MatchString(rf.Name) {
		return Role{}, &FileError{Path: path, Line: line("name"), Err: fmt.Errorf("name %q: use lowercase letters, digits, _ or -, starting with a letter", rf.Name)}
	}
	if len(rf.Tools) == 0 && len(rf.MCPServers) == 0 {
		return Role{}, &FileError{Path: path, Line: line("tools"), Err: errors.New("tools: a role needs at least one tool or MCP server")}
	}
	if err := checkRoleServers(rf.MCPServers); err != nil {
		return Role{}, &FileError{Path: path, Line: line("mcp_servers"), Err: err}
	}
	for i, h := range rf.Hooks {
		if err := h.Validate(nil); err != nil {
			return Role{}, &FileError{Path: path, Line: line("hooks"), Err: fmt.Errorf("hooks[%d]: %w", i, err)}
		}
		if !roleEventsOnly(h) {
			return Role{}, &FileError{Path: path, Line: line("hooks"), Err: fmt.Errorf("hooks[%d]: a role's hook hears its subagents' events (subagent:*, question); session:idle and proposal belong in config.yaml", i)}
		}
	}
	for _, t := range rf.Tools {
		if !known(t) {
			return Role{}, &FileError{Path: path, Line: line("tools"), Err: fmt.Errorf("tools: unknown tool %q", t)}
		}
	}
	r := Role{Name: rf.Name, Description: rf.Description, Tools: rf.Tools, Model: rf.Model, Limits: DefaultLimits,
		ExtendedThinking: rf.ExtendedThinking, Network: rf.Network, ReadOnlyWorkspace: rf.ReadOnly, MCPServers: rf.MCPServers,
		RequiredOutput: rf.RequiredOutput, Resume: rf.Resume, Hooks: rf.Hooks, NoShare: rf.Share != nil && !*rf.Share,
		Prompt: strings.TrimSpace(string(body)), Source: path}
	if r.Model == "" {
		r.Model = defaultRoleModel
	}
	if rf.MaxUses != nil {
		if *rf.MaxUses < 1 || *rf.MaxUses > MaxSearchMaxUses {
			return Role{}, &FileError{Path: path, Line: line("max_uses"), Err: fmt.Errorf("max_uses: %d, must be 1 to %d (the provider's searches in one model call)", *rf.MaxUses, MaxSearchMaxUses)}
		}
		r.MaxUses = *rf.MaxUses
	}
	if err := applyRoleLimits(&r, rf, line); err != nil {
		return Role{}, &FileError{Path: path, Line: err.line, Err: err.err}
	}
	return r, nil
}

// checkRoleServers checks a role's MCP servers: valid names, each once,
// and a definition of the role's own complete, with a URL only on a
// loopback host (a remote server is defined in config.yaml, whose
// mcp_allowed_hosts allows its host, and named by the role).
func checkRoleServers(specs []mcpspec.Spec) error {
	seen := map[string]bool{}
	for _, sp := range specs {
		if seen[sp.Name] {
			return fmt.Errorf("mcp_servers: MCP server %s listed twice", sp.Name)
		}
		seen[sp.Name] = true
		var err error
		if sp.IsRef() {
			err = mcpspec.CheckName(sp.Name)
		} else {
			err = sp.Validate(nil)
		}
		if err != nil {
			return fmt.Errorf("mcp_servers: %w", err)
		}
	}
	return nil
}

// HasOwnMCPServers reports whether the role defines an MCP server (a
// command Ava would run, or a URL) rather than only naming configured
// ones.
func (r Role) HasOwnMCPServers() bool {
	for _, sp := range r.MCPServers {
		if !sp.IsRef() {
			return true
		}
	}
	return false
}

// MCPServerNames lists the names of the role's MCP servers.
func (r Role) MCPServerNames() []string {
	out := make([]string, len(r.MCPServers))
	for i, sp := range r.MCPServers {
		out[i] = sp.Name
	}
	return out
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

// frontMatterError is a front matter decoding error on its line of the
// file (the front matter starts on line 2), in yamlerr's words.
func frontMatterError(path string, err error) error {
	var ye *yamlerr.Error
	if !errors.As(err, &ye) {
		return &FileError{Path: path, Line: 1, Err: fmt.Errorf("front matter: %w", err)}
	}
	ye = ye.Offset(1)
	return &FileError{Path: path, Line: ye.Line(), Err: errors.New("front matter: " + ye.Detail())}
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

// Dir is a folder of custom role files and how far it is trusted.
type Dir struct {
	// Path is the folder, or when Base is set a path relative to Base
	// that is opened beneath it (a symlink cannot lead out of Base).
	Path string
	Base string
	// MayOverride marks the operator's folder (the data root's agents/):
	// every role file in it is trusted, may replace a built-in role or
	// one from an earlier folder of the same name, and names its model
	// as the operator.
	MayOverride bool
	// Trusted are the files of a workspace folder (MayOverride false)
	// the person trusted, by content: each file's path (relative to
	// Base, e.g. .ava/agents/x.md; to the folder when there is no Base)
	// to its FileHash when trusted. A file missing from it, or whose
	// content has another hash, is untrusted and goes through the
	// workspace gate; nil: the workspace is not trusted at all.
	Trusted map[string]string
}

// ErrUntrustedOverride is a role file of an untrusted workspace that
// would replace a built-in or user role; it is skipped.
var ErrUntrustedOverride = errors.New("would replace a role of the same name, but its workspace is not trusted; skipped (trust the workspace with `ava trust` to allow it)")

// ErrWorkspaceHooks is a workspace role file with hooks: hooks run the
// person's commands and reach their URLs, so only config.yaml and the
// data root's roles may define them; the role is skipped, trusted or
// not.
var ErrWorkspaceHooks = errors.New("hooks: only config.yaml and the data root's roles (agents/) may define hooks, never a workspace's role file, trusted or not; role skipped")

// roleEventsOnly reports whether h hears only events a role's own
// subagents cause.
func roleEventsOnly(h hookspec.Spec) bool {
	for _, e := range h.Events {
		if e == hookspec.SessionIdle || e == hookspec.Proposal {
			return false
		}
	}
	return true
}

// maxRoleFileSize bounds one role file read.
const maxRoleFileSize = 1 << 20

// Load loads roles from dirs as LoadDirs does, every folder
// allowed to override.
func Load(dirs []string, known func(string) bool) (map[string]Role, []error) {
	rds := make([]Dir, len(dirs))
	for i, d := range dirs {
		rds[i] = Dir{Path: d, MayOverride: true}
	}
	return LoadDirs(rds, known)
}

// LoadDirs returns the built-in roles plus every custom role found in
// dirs (a later folder replaces a built-in or earlier role of the same
// name when it MayOverride, and the replacing role's Overrides says
// what it replaced), and an error for each role file that could not be
// loaded or was not allowed to override; the other roles still load.
func LoadDirs(dirs []Dir, known func(string) bool) (map[string]Role, []error) {
	roles := map[string]Role{}
	for _, r := range Builtin() {
		roles[r.Name] = r
	}
	var errs []error
	for _, dir := range dirs {
		errs = append(errs, loadRoleDir(dir, roles, known)...)
	}
	return roles, errs
}

// loadRoleDir adds the roles of one folder to roles.
func loadRoleDir(dir Dir, roles map[string]Role, known func(string) bool) []error {
	root, err := openRoleDir(dir)
	if err != nil {
		return []error{fmt.Errorf("roles in %s: %w", dir.display(), err)}
	}
	defer root.Close()
	names, err := roleFileNames(root)
	if err != nil {
		return []error{fmt.Errorf("roles in %s: %w", dir.display(), err)}
	}
	var errs []error
	for _, name := range names {
		p := filepath.Join(dir.display(), name)
		data, err := readRoleFile(root, name)
		if err != nil {
			errs = append(errs, &FileError{Path: p, Err: err})
			continue
		}
		r, err := Parse(p, data, known)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(r.Hooks) > 0 && !dir.MayOverride {
			errs = append(errs, &FileError{Path: p, Line: keyLine(data, "hooks"), Err: ErrWorkspaceHooks})
			continue
		}
		trusted, why := dir.fileTrusted(dir.relPath(name), data)
		if prev, ok := roles[r.Name]; ok {
			if !trusted {
				errs = append(errs, &FileError{Path: p, Err: fmt.Errorf("role %s (%s) %w", r.Name, prev.Source, untrustedOverride(why))})
				continue
			}
			r.Overrides = prev.Source
		}
		switch {
		case dir.MayOverride:
			r.ModelBy = llm.NamedByOperator
		case !trusted:
			r = clampUntrusted(r, why)
		}
		roles[r.Name] = r
	}
	return errs
}

// untrustedOverride is ErrUntrustedOverride, saying why the file is not
// trusted when it is in a trusted workspace.
func untrustedOverride(why string) error {
	if why == "" || strings.Contains(why, "not trusted") {
		return ErrUntrustedOverride
	}
	return fmt.Errorf("%w; the file is %s: review it and run `ava trust` again", ErrUntrustedOverride, why)
}

// relPath is a file of the folder as Trusted names it.
func (d Dir) relPath(name string) string { return filepath.Join(d.Path, name) }

// display is the folder's path for messages.
func (d Dir) display() string {
	if d.Base == "" {
		return d.Path
	}
	return filepath.Join(d.Base, d.Path)
}

// openRoleDir opens the folder, beneath its Base when it has one.
func openRoleDir(d Dir) (*os.Root, error) {
	if d.Base == "" {
		return os.OpenRoot(d.Path)
	}
	base, err := os.OpenRoot(d.Base)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	return base.OpenRoot(d.Path)
}

// roleFileNames lists the *.md entries of root, sorted.
func roleFileNames(root *os.Root) ([]string, error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// readRoleFile reads one role file beneath root: never through a symlink
// that leads out of the folder, without blocking on a FIFO, only a
// regular file, and at most maxRoleFileSize bytes.
func readRoleFile(root *os.Root, name string) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fsread.Regular(f, maxRoleFileSize, "a role file")
}

// Sorted lists roles by name.
func Sorted(m map[string]Role) []Role {
	out := make([]Role, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
