// Package mcpspec is what an MCP server is to Ava's configuration: the
// definition config.yaml's mcp_servers and a role's mcp_servers decode
// into (Spec, Specs), with its validation. It is a leaf: config and the
// role loader read it without importing the client pool (package
// mcpclient), which runs what it describes.
package mcpspec

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/avaagent/ava/internal/lazyre"
	"gopkg.in/yaml.v3"
)

// Spec is one MCP server: a name and either a command (run over stdio,
// with Args, the variables of Env and the variables of Ava's environment
// named in PassEnv) or a URL (streamable HTTP). A Spec with only a Name
// refers to a server defined elsewhere (a role naming a server of the
// config file).
//
// A command runs in a folder of its own (Cwd, or <state dir>/<name>),
// never in the workspace, and, unless Sandbox is false, in the process
// sandbox (package sandbox): no network unless Network, then only
// through the egress proxy; the workspace, its own folder, the system
// folders and the paths of ReadOnlyPaths and WritePaths visible, nothing
// else.
type Spec struct {
	Name    string            `yaml:"name" json:"name"`
	Command string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// PassEnv names variables of Ava's own environment the server gets
	// (a token it needs), so that a config file never holds the secret.
	PassEnv []string `yaml:"pass_env,omitempty" json:"pass_env,omitempty"`
	URL     string   `yaml:"url,omitempty" json:"url,omitempty"`
	// Sandbox false runs the command unconfined, with the user's full
	// rights: an explicit opt-out, shown as UNSANDBOXED. Unset or true
	// runs it in the process sandbox.
	Sandbox *bool `yaml:"sandbox,omitempty" json:"sandbox,omitempty"`
	// Network lets a sandboxed command reach the network, only through
	// the egress proxy (public addresses, AVA_EGRESS_ALLOW).
	Network bool `yaml:"network,omitempty" json:"network,omitempty"`
	// Cwd is the command's working folder and HOME (absolute, outside
	// the workspace); default <state dir>/<name>, made on first start.
	Cwd string `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	// ReadOnlyPaths and WritePaths are more absolute paths a sandboxed
	// command sees (read and execute; read and write): its install
	// folder, a runtime outside /usr, a cache, a filesystem server's
	// folders outside the workspace.
	ReadOnlyPaths []string `yaml:"read_only_paths,omitempty" json:"read_only_paths,omitempty"`
	WritePaths    []string `yaml:"write_paths,omitempty" json:"write_paths,omitempty"`
}

// IsRef reports whether the spec only names a server defined elsewhere.
func (s Spec) IsRef() bool {
	return s.Command == "" && s.URL == "" && len(s.Args) == 0 && len(s.Env) == 0 && len(s.PassEnv) == 0 && s.noProcessSettings()
}

// Sandboxed reports whether a command server runs in the process
// sandbox: always, unless the spec says sandbox: false.
func (s Spec) Sandboxed() bool { return s.Sandbox == nil || *s.Sandbox }

// OperatorOnly names the settings of s that only the operator may make
// (config.yaml, a role in the data root), not a workspace's role file:
// the opt-out of the sandbox and what widens it (folders outside the
// workspace, a working folder of its own choosing). Empty when none.
func (s Spec) OperatorOnly() []string {
	var out []string
	if !s.Sandboxed() {
		out = append(out, "sandbox: false")
	}
	if s.Cwd != "" {
		out = append(out, "cwd")
	}
	if len(s.ReadOnlyPaths) > 0 {
		out = append(out, "read_only_paths")
	}
	if len(s.WritePaths) > 0 {
		out = append(out, "write_paths")
	}
	return out
}

// Target is the command line or the URL, for display.
func (s Spec) Target() string {
	if s.URL != "" {
		return s.URL
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

// Kind is "stdio", "url" or "ref".
func (s Spec) Kind() string {
	switch {
	case s.URL != "":
		return "url"
	case s.Command != "":
		return "stdio"
	}
	return "ref"
}

// Equal reports whether two specs define the same server.
func (s Spec) Equal(o Spec) bool {
	return s.Name == o.Name && s.Command == o.Command && s.URL == o.URL && slices.Equal(s.Args, o.Args) &&
		maps.Equal(s.Env, o.Env) && slices.Equal(s.PassEnv, o.PassEnv) && s.Sandboxed() == o.Sandboxed() &&
		s.Network == o.Network && s.Cwd == o.Cwd && slices.Equal(s.ReadOnlyPaths, o.ReadOnlyPaths) && slices.Equal(s.WritePaths, o.WritePaths)
}

// nameRe is a server's name: it prefixes its tools' names (a model's
// tool names allow letters, digits, _ and -), and "__" separates it
// from the tool's own name, so it holds no "__" itself.
var nameRe = lazyre.New(`^[a-z][a-z0-9-]*(_[a-z0-9-]+)*$`)

// maxNameLen bounds a server's name, leaving room in the 64 characters
// a tool name may have.
const maxNameLen = 24

// envNameRe is a variable's name.
var envNameRe = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckName says what is wrong with a server name, or nil.
func CheckName(name string) error {
	if !nameRe().MatchString(name) || len(name) > maxNameLen {
		return fmt.Errorf("MCP server name %q: use up to %d lowercase letters, digits, - or single _, starting with a letter", name, maxNameLen)
	}
	return nil
}

// Validate checks a full definition (not a reference): a valid name,
// exactly one of command and url, a URL on a loopback host unless its
// host is in allowHosts, and variable names. The error names the server.
func (s Spec) Validate(allowHosts []string) error {
	if err := CheckName(s.Name); err != nil {
		return err
	}
	var errs []error
	switch {
	case s.Command != "" && s.URL != "":
		errs = append(errs, errors.New("give either command or url, not both"))
	case s.Command == "" && s.URL == "":
		errs = append(errs, errors.New("give a command (stdio) or a url (streamable HTTP)"))
	case s.URL != "":
		if len(s.Args) > 0 || len(s.Env) > 0 || len(s.PassEnv) > 0 || !s.noProcessSettings() {
			errs = append(errs, errors.New("args, env, pass_env, sandbox, network, cwd, read_only_paths and write_paths are for a command, not a url"))
		}
		if err := CheckURL(s.URL, allowHosts); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, s.checkProcess()...)
	}
	for k := range s.Env {
		if !envNameRe().MatchString(k) {
			errs = append(errs, fmt.Errorf("env: %q is not a variable name", k))
		}
	}
	for _, k := range s.PassEnv {
		if !envNameRe().MatchString(k) {
			errs = append(errs, fmt.Errorf("pass_env: %q is not a variable name", k))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("MCP server %s: %w", s.Name, err)
	}
	return nil
}

// noProcessSettings reports whether s sets none of the settings of a
// command's process (sandbox, network, cwd, paths).
func (s Spec) noProcessSettings() bool {
	return s.Sandbox == nil && !s.Network && s.Cwd == "" && len(s.ReadOnlyPaths) == 0 && len(s.WritePaths) == 0
}

// checkProcess checks a command's process settings: absolute paths, and
// no network or paths for an unsandboxed command (it has all of them).
func (s Spec) checkProcess() []error {
	var errs []error
	if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
		errs = append(errs, fmt.Errorf("cwd: %q is not an absolute path", s.Cwd))
	}
	for key, paths := range map[string][]string{"read_only_paths": s.ReadOnlyPaths, "write_paths": s.WritePaths} {
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				errs = append(errs, fmt.Errorf("%s: %q is not an absolute path", key, p))
			} else if filepath.Clean(p) == "/" {
				errs = append(errs, fmt.Errorf("%s: / would make the whole machine visible", key))
			}
		}
	}
	if !s.Sandboxed() && (s.Network || len(s.ReadOnlyPaths) > 0 || len(s.WritePaths) > 0) {
		errs = append(errs, errors.New("network, read_only_paths and write_paths are for a sandboxed server; with sandbox: false it runs unconfined with all of them"))
	}
	return errs
}

// CheckURL accepts an http or https URL whose host is loopback
// (localhost, 127.0.0.0/8, ::1) or one of allowHosts (exact host names,
// compared without case).
func CheckURL(raw string, allowHosts []string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: want http:// or https://", raw)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("url %q: no host", raw)
	}
	if isLoopback(host) {
		return nil
	}
	for _, h := range allowHosts {
		if strings.EqualFold(strings.TrimSpace(h), host) {
			return nil
		}
	}
	return fmt.Errorf("url %q: host %s is not loopback; allow it in config.yaml's mcp_allowed_hosts to use it", raw, host)
}

// isLoopback reports a loopback host name or address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Specs is a list of servers as YAML gives it: either a list whose
// entries are a server's name (a reference) or a mapping, or a mapping
// from name to definition.
type Specs []Spec

// UnmarshalYAML reads either form, refusing unknown keys.
func (s *Specs) UnmarshalYAML(n *yaml.Node) error {
	var out Specs
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if item.Kind == yaml.ScalarNode {
				out = append(out, Spec{Name: item.Value})
				continue
			}
			sp, err := decodeSpec(item)
			if err != nil {
				return err
			}
			out = append(out, sp)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			name := n.Content[i].Value
			sp, err := decodeSpec(n.Content[i+1])
			if err != nil {
				return fmt.Errorf("MCP server %s: %w", name, err)
			}
			if sp.Name != "" && sp.Name != name {
				return fmt.Errorf("line %d: MCP server %s has name %q in its definition", n.Content[i].Line, name, sp.Name)
			}
			sp.Name = name
			out = append(out, sp)
		}
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			break
		}
		return fmt.Errorf("line %d: mcp_servers: want a list or a mapping of servers", n.Line)
	default:
		return fmt.Errorf("line %d: mcp_servers: want a list or a mapping of servers", n.Line)
	}
	*s = out
	return nil
}

// decodeSpec decodes one definition, refusing unknown keys.
func decodeSpec(n *yaml.Node) (Spec, error) {
	if n.Kind != yaml.MappingNode {
		return Spec{}, fmt.Errorf("line %d: an MCP server is a name or a mapping (name, command, args, env, pass_env, url, sandbox, network, cwd, read_only_paths, write_paths)", n.Line)
	}
	allowed := []string{"name", "command", "args", "env", "pass_env", "url", "sandbox", "network", "cwd", "read_only_paths", "write_paths"}
	which := "an MCP server"
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			which = "MCP server " + n.Content[i+1].Value
		}
	}
	for i := 0; i < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(allowed, k.Value) {
			return Spec{}, fmt.Errorf("line %d: unknown key %q in %s (known: %s)", k.Line, k.Value, which, strings.Join(allowed, ", "))
		}
	}
	var sp Spec
	if err := n.Decode(&sp); err != nil {
		return Spec{}, fmt.Errorf("line %d: %s: %w", n.Line, which, err)
	}
	return sp, nil
}
