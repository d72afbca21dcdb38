package permission

import (
	"os"
	"slices"
	"strings"
	"testing"

	"maps"

	"github.com/keel-dev/keel/internal/goldentest"
)

const (
	docBegin = "<!-- dangerous options: generated from dangerous.go by TestDangerousOptionsDocumented (-update rewrites it) -->\n"
	docEnd   = "<!-- end of dangerous options -->\n"
)

// TestDangerousOptionsDocumented keeps PERMISSIONS.md's table of dangerous options the same
// as the one keel applies, with the reason for every entry.
func TestDangerousOptionsDocumented(t *testing.T) {
	var b strings.Builder
	b.WriteString("| program | options | why a prefix rule does not cover them |\n|---|---|---|\n")
	row := func(prog string, opts []dangerousOption, note string) {
		for _, o := range opts {
			names := make([]string, len(o.names))
			for i, n := range o.names {
				names[i] = "`" + n + "`"
			}
			b.WriteString("| " + prog + " | " + strings.Join(names, " ") + note + " | " + o.reason + " |\n")
		}
	}
	row("git (before the subcommand)", gitDangerTable()[""], "")
	row("git (any subcommand)", gitDangerTable()["*"], "")
	b.WriteString("| git (any subcommand) | an `ext::` URL | a transport that runs the command it names |\n")
	for _, sub := range slices.Sorted(maps.Keys(gitDangerTable())) {
		if sub != "" && sub != "*" {
			row("git "+sub, gitDangerTable()[sub], "")
		}
	}
	b.WriteString("| git config | setting a value | settings such as `core.pager`, `core.hooksPath` or an alias run programs |\n")
	// Programs with the same entry (awk, gawk…) share rows.
	rows := map[string][]string{}
	var order []string
	for _, prog := range slices.Sorted(maps.Keys(dangerousTable())) {
		spec := dangerousTable()[prog]
		note := ""
		switch {
		case spec.wholeWords:
			note = " (whole words)"
		case spec.beforeOperand:
			note = " (before the script or first operand)"
		}
		var r strings.Builder
		for _, o := range spec.options {
			names := make([]string, len(o.names))
			for i, n := range o.names {
				names[i] = "`" + n + "`"
			}
			r.WriteString(" | " + strings.Join(names, " ") + note + " | " + o.reason + " |\n")
		}
		if spec.checkDoc != "" {
			r.WriteString(" | " + strings.ReplaceAll(spec.checkDoc, "|", `\|`) + " | runs code or writes files the rule's words do not suggest |\n")
		}
		if _, ok := rows[r.String()]; !ok {
			order = append(order, r.String())
		}
		rows[r.String()] = append(rows[r.String()], prog)
	}
	for _, r := range order {
		for line := range strings.Lines(r) {
			b.WriteString("| " + strings.Join(rows[r], ", ") + line)
		}
	}
	table := docBegin + b.String() + docEnd
	doc, err := os.ReadFile("PERMISSIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(string(doc), docBegin), strings.Index(string(doc), docEnd)
	if i < 0 || j < i {
		t.Fatalf("PERMISSIONS.md has no dangerous-options section between %q and %q", docBegin, docEnd)
	}
	if got := string(doc[i : j+len(docEnd)]); got != table {
		if goldentest.Update() {
			if err := os.WriteFile("PERMISSIONS.md", []byte(string(doc[:i])+table+string(doc[j+len(docEnd):])), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("PERMISSIONS.md's dangerous-options table differs from dangerous.go; run the test with -update")
	}
}
