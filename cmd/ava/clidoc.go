package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command reference in docs/cli.md is generated from the command
// definitions, between these markers, so that it cannot drift from
// --help; TestCLIReference fails when it is stale, and
// `go test ./cmd/ava -run TestCLIReference -update` writes it again.
const (
	cliDocPath  = "../../docs/cli.md"
	cliDocBegin = "<!-- BEGIN generated from the command definitions (cmd/ava): go test ./cmd/ava -run TestCLIReference -update -->"
	cliDocEnd   = "<!-- END generated -->"
)

// cliReference is the Markdown reference of every visible command under
// root: an index, then a section per command with its synopsis, what it
// does, its flags and examples.
func cliReference(root *cobra.Command) []byte {
	cmds := visibleCommands(root)
	var b bytes.Buffer
	b.WriteString("| Command | What it does |\n|---|---|\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", c.CommandPath(), anchor(c.CommandPath()), cell(c.Short))
	}
	for _, c := range cmds {
		writeCommand(&b, c)
	}
	return b.Bytes()
}

// visibleCommands is every command under root but root, help, hidden
// ones and completion's shells, depth first in cobra's (alphabetical)
// order.
func visibleCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		out = append(out, c)
		if c.Name() != "completion" { // one section; its shells are in its help
			out = append(out, visibleCommands(c)...)
		}
	}
	return out
}

// writeCommand writes one command's section.
func writeCommand(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "\n### %s\n\n", c.CommandPath())
	fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	long := c.Long
	if long == "" {
		long = c.Short
	}
	fmt.Fprintf(b, "%s\n", strings.TrimSpace(long))
	if flags := flagRows(c.NonInheritedFlags()); flags != "" {
		fmt.Fprintf(b, "\n| Flag | Default | Meaning |\n|---|---|---|\n%s", flags)
	}
	if c.Example != "" {
		fmt.Fprintf(b, "\nExamples:\n\n```sh\n%s\n```\n", trimExample(c.Example))
	}
}

// flagRows is a table row per visible flag of fs.
func flagRows(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0" {
			def = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, def, cell(f.Usage))
	})
	return b.String()
}

// trimExample removes the two spaces cobra's examples are indented by.
func trimExample(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}

// cell is text safe in a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// anchor is the heading ID GitHub gives "### ava mcp list".
func anchor(heading string) string { return strings.ReplaceAll(heading, " ", "-") }
