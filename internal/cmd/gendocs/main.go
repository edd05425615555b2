// Command gendocs writes the documents generated from Ava's own
// definitions: docs/configuration.md from package config's settings.
// Run it from anywhere in the module (go generate ./config does).
package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/avaagent/ava/config"
)

func main() {
	if err := run(); err != nil {
		slog.Error("gendocs", "err", err)
		os.Exit(1)
	}
}

// run writes config.Reference to config.ReferencePath under the module root.
func run() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	path := filepath.Join(root, filepath.FromSlash(config.ReferencePath))
	if err := os.WriteFile(path, config.Reference(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Println("wrote", path)
	return nil
}

// moduleRoot is the folder of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root (go env GOMOD): %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("find the module root: not inside a Go module")
	}
	return filepath.Dir(mod), nil
}
