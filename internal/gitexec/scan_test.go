package gitexec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// otherPrograms are the places outside this package that start a program named by a value
// rather than a literal, with what they start. None of them is git: adding one here is a
// claim a reviewer checks.
var otherPrograms = map[string]string{
	"internal/team/launch.go":                "keel itself (team worker processes)",
	"internal/daemon/client.go":              "keel itself (the supervisor)",
	"internal/daemon/supervisor.go":          "keel itself (supervisor run-job)",
	"internal/daemon/nats.go":                "keel-nats, the embedded NATS server",
	"internal/lsp/client.go":                 "a language server the lspServers settings name (trust-gated)",
	"internal/shell/proc_unix.go":            "bash for the Bash tool",
	"internal/builtin/grep_rg.go":            "ripgrep for Grep",
	"internal/cli/launch.go":                 "keel-tui (syscall.Exec)",
	"internal/mcphost/stdio.go":              "an MCP server the configuration names (trust-gated)",
	"internal/telemetry/exporter.go":         "keel-otel, the telemetry exporter",
	"doctor_api.go":                          "ripgrep --version for the doctor (git goes through gitexec)",
	"internal/cli/doctor.go":                 "the person's own command for keel sandbox -- (confined, as the Bash tool's)",
	"internal/sandbox/helper_linux.go":       "the confined command (bash for the Bash tool, the person's for keel sandbox --)",
	"internal/sandbox/landlockonly_linux.go": "the confined command, as in helper_linux.go (the Landlock-only fallback)",
	"internal/sandbox/confine_linux.go":      "true, the probe that the namespaces start",
	"internal/sandbox/bwrap_linux.go":        "bwrap --version, to choose bubblewrap as the sandbox's launcher",
	"internal/sandbox/sandbox_darwin.go":     "/usr/bin/sandbox-exec, macOS's Seatbelt, probing and confining commands",
	"scripts/costbench/main.go":              "keel and the Claude Code binary for the cost benchmark",
	"internal/coord/coordpipe/process.go":    "keel-nats coord, the companion that holds a team's NATS connection",
	"internal/webfetch/companion.go":         "keel-web, the companion that converts WebFetch's pages",
	"internal/hostexec/hostexec.go":          "what its callers name, resolved on PATH (hostexec.Command counts here as exec.CommandContext, so git named there is caught at the caller)",
}

// TestEveryGitExecGoesThroughGitexec parses every Go file of the module and finds each place
// that starts a program (exec.Command, exec.CommandContext, hostexec.Command, syscall.Exec,
// os.StartProcess, an exec.Cmd literal): git named literally is allowed only here and in internal/gittest (the
// tests' own repositories), and a program named by a value only where otherPrograms says what
// it is. So nothing in keel runs git without the neutralised configuration.
func TestEveryGitExecGoesThroughGitexec(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	var sites int
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		for _, s := range programStarts(t, p) {
			sites++
			exempt := strings.HasPrefix(rel, "internal/gitexec/") || strings.HasPrefix(rel, "internal/gittest/")
			switch {
			case s.literal && path.Base(s.program) == "git" && !exempt:
				t.Errorf("%s:%d runs git directly; run it with gitexec.Runner so an untrusted repository's configuration runs nothing", rel, s.line)
			case !s.literal && !exempt && !strings.HasSuffix(rel, "_test.go") && otherPrograms[rel] == "":
				t.Errorf("%s:%d starts a program named by %s; if it can never be git, list the file in otherPrograms with what it runs", rel, s.line, s.program)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sites < 10 {
		t.Errorf("found only %d places that start programs: the scan no longer sees them", sites)
	}
}

type programStart struct {
	program string // the literal's value, or the expression's source
	literal bool
	line    int
}

// programStarts finds the calls in one file that start a program, with the program argument.
func programStarts(t *testing.T, file string) []programStart {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	// The names the file gives os/exec, syscall and os.
	names := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	var out []programStart
	add := func(e ast.Expr) {
		s := programStart{line: fset.Position(e.Pos()).Line}
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s.program, _ = strconv.Unquote(lit.Value)
			s.literal = true
		} else {
			s.program = source(fset, e)
		}
		out = append(out, s)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch names[pkg.Name] + "." + sel.Sel.Name {
			case "os/exec.Command", "syscall.Exec", "os.StartProcess":
				if len(n.Args) > 0 {
					add(n.Args[0])
				}
			case "os/exec.CommandContext", "github.com/keel-dev/keel/internal/hostexec.Command":
				if len(n.Args) > 1 {
					add(n.Args[1])
				}
			}
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Cmd" {
				if pkg, ok := sel.X.(*ast.Ident); ok && names[pkg.Name] == "os/exec" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Path" {
								add(kv.Value)
							}
						}
					}
				}
			}
		}
		return true
	})
	return out
}

// source renders an expression's source for the error message.
func source(fset *token.FileSet, e ast.Expr) string {
	start, end := fset.Position(e.Pos()), fset.Position(e.End())
	data, err := os.ReadFile(start.Filename)
	if err != nil || end.Offset > len(data) {
		return "an expression"
	}
	return string(data[start.Offset:end.Offset])
}
