package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

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
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fsread.Regular(f, maxConfigSize, "a config file")
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

// WorkspaceTrusted reports whether ws is one of TrustedWorkspaces (the
// folder itself, not a folder inside one).
func (c Config) WorkspaceTrusted(ws string) bool {
	if ws == "" {
		return false
	}
	want, err := canonicalPath(ws)
	if err != nil {
		return false
	}
	for _, t := range c.TrustedWorkspaces {
		if got, err := canonicalPath(t); err == nil && got == want {
			return true
		}
	}
	return false
}

// SetTrusted adds the workspace at path to (trusted) or removes it from
// the trusted_workspaces list of the config file in dataRoot, creating
// the file if needed and keeping its other settings. It returns the
// canonical path and whether the file changed.
func SetTrusted(dataRoot, path string, trusted bool) (string, bool, error) {
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
	changed := editList(list, ws, trusted)
	if !changed {
		return ws, false, nil
	}
	return ws, true, writeDocument(file, doc)
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

// editList adds ws to or removes it from the sequence list, reporting a
// change.
func editList(list *yaml.Node, ws string, add bool) bool {
	i := slices.IndexFunc(list.Content, func(n *yaml.Node) bool {
		p, err := canonicalPath(n.Value)
		return n.Value == ws || (err == nil && p == ws)
	})
	switch {
	case add && i < 0:
		list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: ws})
		return true
	case !add && i >= 0:
		list.Content = slices.Delete(list.Content, i, i+1)
		return true
	}
	return false
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
