package gateway_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestAPIDocListsTheRoutes: the route table of docs/api.md names every
// route the server registers (Server.Routes) and no other. A row's
// first cell holds the routes in backquotes, "METHOD /path …", methods
// joined by "|" when several share the path.
func TestAPIDocListsTheRoutes(t *testing.T) {
	e := newEnv(t, envOptions{})
	src, err := os.ReadFile("../docs/api.md")
	must(t, err)
	documented := docRoutes(string(src))
	if len(documented) == 0 {
		t.Fatal("no route table found in docs/api.md")
	}
	var served []string
	for _, pattern := range e.srv.Routes() {
		served = append(served, strings.TrimSuffix(pattern, "{$}"))
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("served but not in docs/api.md's route table: %s", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("in docs/api.md's route table but not served: %s", r)
		}
	}
}

// docRoutes reads the routes of the "## Routes" table: each backquoted
// "METHOD[|METHOD…] /path…" of a row's first cell, its path cut at the
// first space, "[" or "?".
func docRoutes(doc string) []string {
	_, table, ok := strings.Cut(doc, "\n## Routes\n")
	if !ok {
		return nil
	}
	table, _, _ = strings.Cut(table, "\n## ")
	code := regexp.MustCompile("`([A-Z|\\\\]+) (/[^` \\[?]*)[^`]*`")
	var out []string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(line[1:], " | ")
		for _, m := range code.FindAllStringSubmatch(first, -1) {
			for _, method := range strings.Split(strings.ReplaceAll(m[1], `\|`, "|"), "|") {
				out = append(out, method+" "+m[2])
			}
		}
	}
	return out
}
