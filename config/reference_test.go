package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/avaagent/ava/config"
)

// TestReferenceIsGenerated fails when docs/configuration.md is not what
// config.Reference writes, and says how to regenerate it.
func TestReferenceIsGenerated(t *testing.T) {
	path := filepath.Join("..", filepath.FromSlash(config.ReferencePath))
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run: %s", err, config.RegenerateCommand)
	}
	if diff := cmp.Diff(string(config.Reference()), string(got)); diff != "" {
		t.Errorf("%s is out of date; run: %s\n(-generated +file):\n%s", config.ReferencePath, config.RegenerateCommand, diff)
	}
}

// TestEverySettingDocumented: each setting has a meaning and a default,
// and its default is written once: by Default() or by the Setting's
// Default text, not both.
func TestEverySettingDocumented(t *testing.T) {
	for _, s := range append(config.Settings(), config.DataRootSetting()) {
		if s.Meaning == "" {
			t.Errorf("%s: no Meaning", s.Env)
		}
		if s.DefaultText() == "" {
			t.Errorf("%s: no default: set it in Default() or describe it in the Setting's Default", s.Env)
		}
		if s.Default != "" && s.DefaultText() != s.Default {
			t.Errorf("%s: default given twice: Default() sets %s, the Setting says %q; keep one", s.Env, s.DefaultText(), s.Default)
		}
	}
	for _, k := range config.FileKeys() {
		if k.Meaning == "" || k.Default == "" {
			t.Errorf("config.yaml %s: no meaning or default", k.Key)
		}
	}
}

// TestEveryFileKeyDocumented: every key config.yaml takes (Config's
// yaml tags, one level into nested settings) is a Setting's key or a
// FileKey, and every documented key is one config.yaml takes.
func TestEveryFileKeyDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, s := range config.Settings() {
		if s.Key != "" {
			documented[s.Key] = true
		}
	}
	for _, k := range config.FileKeys() {
		documented[k.Key] = true
	}
	taken := yamlKeys(reflect.TypeFor[config.Config](), "")
	for key := range taken {
		if !documented[key] {
			t.Errorf("config.yaml key %s: not documented; add it to config.Settings or config's fileKeys", key)
		}
	}
	for key := range documented {
		if !taken[key] {
			t.Errorf("documented key %s: config.yaml does not take it", key)
		}
	}
}

// yamlKeys returns the yaml keys of a struct type, dotted one level
// into the struct fields whose keys are settings of their own
// (anthropic.base_url, web.searxng_url).
func yamlKeys(typ reflect.Type, prefix string) map[string]bool {
	out := map[string]bool{}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		if prefix == "" && f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == typ.PkgPath() {
			for k := range yamlKeys(f.Type, name+".") {
				out[k] = true
			}
			continue
		}
		out[prefix+name] = true
	}
	return out
}
