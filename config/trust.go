package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/avaagent/ava/internal/fserr"
	"github.com/avaagent/ava/internal/fsread"
)

// maxConfigSize bounds the config file read.
const maxConfigSize = 1 << 20

// trustedKey is the config file key of TrustedWorkspaces.
const trustedKey = "trusted_workspaces"

// readConfigFile reads the config file at path without blocking on a
// FIFO, only if it is a regular file, and at most maxConfigSize bytes.
func readConfigFile(path string) ([]byte, error) {
	return fsread.File(path, maxConfigSize, "a config file")
}

// canonicalPath is p absolute with its symlinks resolved (as far as it
// exists), so two spellings of one folder compare equal.
func canonicalPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// TrustedWorkspace is a workspace the person trusted and the files of
// its .ava/agents/ they trusted, by content.
type TrustedWorkspace struct {
	// Path is the workspace folder.
	Path string `yaml:"path"`
	// Files maps each trusted role file, by its path relative to the
	// workspace (.ava/agents/x.md), to its content's hash
	// ("sha256:<hex>"). A file not in it, or with another hash, is not
	// trusted.
	Files map[string]string `yaml:"files,omitempty"`
	// Recorded is false for an entry that names a path only: the format
	// of the config file before contents were recorded, or
	// AVA_TRUSTED_WORKSPACES. Its path is trusted but none of its files
	// is, until `ava trust` records them.
	Recorded bool `yaml:"-"`
}

// UnmarshalYAML reads an entry: a mapping (path, files) as `ava trust`
// writes it, or a bare path (the old format: Recorded false).
func (t *TrustedWorkspace) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*t = TrustedWorkspace{Path: n.Value}
		return nil
	}
	type plain TrustedWorkspace
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*t = TrustedWorkspace(p)
	t.Recorded = true
	if t.Files == nil {
		t.Files = map[string]string{}
	}
	return nil
}

// WorkspaceTrusted reports whether ws is one of TrustedWorkspaces (the
// folder itself, not a folder inside one), whatever its files.
func (c Config) WorkspaceTrusted(ws string) bool {
	_, ok := c.WorkspaceTrust(ws)
	return ok
}

// WorkspaceTrust returns the entry of TrustedWorkspaces for ws (the
// folder itself; the first with recorded files when it is listed more
// than once), and whether there is one.
func (c Config) WorkspaceTrust(ws string) (TrustedWorkspace, bool) {
	if ws == "" {
		return TrustedWorkspace{}, false
	}
	want, err := canonicalPath(ws)
	if err != nil {
		return TrustedWorkspace{}, false
	}
	var found *TrustedWorkspace
	for i, t := range c.TrustedWorkspaces {
		if got, err := canonicalPath(t.Path); err == nil && got == want && (found == nil || !found.Recorded) {
			found = &c.TrustedWorkspaces[i]
		}
	}
	if found == nil {
		return TrustedWorkspace{}, false
	}
	return *found, true
}

// FileChange is a trusted workspace file whose content is not what the
// person trusted.
type FileChange struct {
	// Path is relative to the workspace.
	Path string
	// Kind is "new" (not recorded), "changed" (another hash), or
	// "removed" (recorded, gone).
	Kind string
}

// Changes compares the files of the workspace now (path → hash) with
// what t recorded, sorted by path. For an entry with nothing recorded
// (Recorded false), every file is new.
func (t TrustedWorkspace) Changes(now map[string]string) []FileChange {
	var out []FileChange
	for p, h := range now {
		switch old, ok := t.Files[p]; {
		case !ok:
			out = append(out, FileChange{Path: p, Kind: "new"})
		case old != h:
			out = append(out, FileChange{Path: p, Kind: "changed"})
		}
	}
	for p := range t.Files {
		if _, ok := now[p]; !ok {
			out = append(out, FileChange{Path: p, Kind: "removed"})
		}
	}
	slices.SortFunc(out, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// SetTrusted adds the workspace at path to (trusted) or removes it from
// the trusted_workspaces list of the config file in dataRoot, creating
// the file if needed and keeping its other settings. Trusting records
// files (path relative to the workspace → content hash) as the files
// trusted, replacing what an earlier `ava trust` recorded (an entry of
// the old format becomes one of the new). It returns the canonical path
// and whether the file changed.
func SetTrusted(dataRoot, path string, trusted bool, files map[string]string) (string, bool, error) {
	ws, err := canonicalPath(path)
	if err != nil {
		return "", false, err
	}
	if trusted {
		if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
			return ws, false, fmt.Errorf("trust %s: not a folder", ws)
		}
	}
	file := filepath.Join(dataRoot, FileName)
	doc, err := loadDocument(file)
	if err != nil {
		return ws, false, err
	}
	list := trustedList(doc)
	var entry *yaml.Node
	if trusted {
		if entry, err = trustEntry(ws, files); err != nil {
			return ws, false, err
		}
	}
	if !editList(list, ws, entry) {
		return ws, false, nil
	}
	return ws, true, writeDocument(file, doc)
}

// trustEntry is the YAML of a trusted workspace entry.
func trustEntry(ws string, files map[string]string) (*yaml.Node, error) {
	if files == nil {
		files = map[string]string{}
	}
	var n yaml.Node
	if err := n.Encode(struct {
		Path  string            `yaml:"path"`
		Files map[string]string `yaml:"files"`
	}{ws, files}); err != nil {
		return nil, fmt.Errorf("trust %s: %w", ws, err)
	}
	return &n, nil
}

// loadDocument reads the config file as a YAML document (an empty
// mapping if there is none).
func loadDocument(file string) (*yaml.Node, error) {
	data, err := readConfigFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fserr.Wrap("read config", file, err)
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("config %s: %w", file, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config %s: the top level is not a mapping of settings", file)
	}
	return &doc, nil
}

// trustedList finds or adds the trusted_workspaces sequence of doc.
func trustedList(doc *yaml.Node) *yaml.Node {
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == trustedKey {
			v := m.Content[i+1]
			if v.Kind != yaml.SequenceNode {
				*v = yaml.Node{Kind: yaml.SequenceNode}
			}
			return v
		}
	}
	v := &yaml.Node{Kind: yaml.SequenceNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: trustedKey}, v)
	return v
}

// editList makes entry the list's only entry for ws (replacing the ones
// there), or with entry nil removes them, reporting a change.
func editList(list *yaml.Node, ws string, entry *yaml.Node) bool {
	var kept []*yaml.Node
	var old []*yaml.Node
	for _, n := range list.Content {
		if entryPath(n) == ws {
			old = append(old, n)
			continue
		}
		kept = append(kept, n)
	}
	if entry == nil {
		list.Content = kept
		return len(old) > 0
	}
	if len(old) == 1 && sameNode(old[0], entry) {
		return false
	}
	list.Content = append(kept, entry)
	return true
}

// entryPath is the canonical path of a trusted_workspaces entry (a bare
// path or a mapping with path), or "".
func entryPath(n *yaml.Node) string {
	var t TrustedWorkspace
	if err := n.Decode(&t); err != nil || t.Path == "" {
		return ""
	}
	if p, err := canonicalPath(t.Path); err == nil {
		return p
	}
	return t.Path
}

// sameNode reports whether two entries hold the same path and files.
func sameNode(a, b *yaml.Node) bool {
	var x, y TrustedWorkspace
	if a.Decode(&x) != nil || b.Decode(&y) != nil {
		return false
	}
	return x.Recorded == y.Recorded && x.Path == y.Path && maps.Equal(x.Files, y.Files)
}

// writeDocument replaces file with doc atomically, private to the user.
func writeDocument(file string, doc *yaml.Node) error {
	data, err := yaml.Marshal(doc)
	if err != nil {
		return fmt.Errorf("config %s: %w", file, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fserr.Wrap("create data root", filepath.Dir(file), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".config-*.yaml")
	if err != nil {
		return fserr.Wrap("write config", file, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fserr.Wrap("write config", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fserr.Wrap("write config", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fserr.Wrap("write config", file, err)
	}
	return nil
}
