package lsp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

// goplsPath finds gopls: $KEEL_GOPLS (scripts/test.sh installs a pinned one), else PATH.
func goplsPath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("KEEL_GOPLS"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("gopls"); err == nil {
		return p
	}
	tb.Skip("SKIPPED: gopls not found (set KEEL_GOPLS or run scripts/test.sh, which installs it) — diagnostics are not checked against a real language server")
	return ""
}

const goodMain = `package main

import "fmt"

func main() {
	fmt.Println(greeting())
}

func greeting() string { return "hello" }
`

// goModule writes a small module and returns a manager with gopls for it.
func goModule(tb testing.TB) (*Manager, string) {
	tb.Helper()
	gopls := goplsPath(tb)
	dir := tb.TempDir()
	for name, content := range map[string]string{"go.mod": "module example.com/hello\n\ngo 1.22\n", "main.go": goodMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	m := New(Options{
		Servers: []Config{{Name: "gopls", Command: gopls, Args: []string{"serve"}, Extensions: map[string]string{".go": "go"},
			StartupTimeout: waittest.Timeout()}},
		Root: dir, Environ: append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"), Wait: waittest.Timeout(),
	})
	tb.Cleanup(m.Close)
	return m, dir
}

// TestGoplsDiagnosticsAfterAnEdit breaks a Go file the way a bad Edit does and expects gopls'
// type error back; fixing it reports nothing.
func TestGoplsDiagnosticsAfterAnEdit(t *testing.T) {
	m, dir := goModule(t)
	path := filepath.Join(dir, "main.go")
	opened(t, m, path)

	m.Before("", path)
	write(t, path, strings.Replace(goodMain, "greeting()", "greting()", 1))
	rep := m.After(t.Context(), "", path)
	if rep.Note != "" || len(rep.Files) != 1 {
		t.Fatalf("report = %+v, want one file with diagnostics", rep)
	}
	d := rep.Files[0].Diagnostics[0]
	if d.Severity != SeverityError || d.Line != 6 || !strings.Contains(d.Message, "undefined: greting") {
		t.Errorf("diagnostic = %+v, want the undefined name on line 6", d)
	}
	text := Format(rep.Files, dir)
	if !strings.Contains(text, "main.go:\n  error [6:14] undefined: greting") {
		t.Errorf("formatted:\n%s", text)
	}

	m.Before("", path)
	write(t, path, goodMain)
	if rep := m.After(t.Context(), "", path); len(rep.Files) != 0 {
		t.Errorf("after the fix: %+v", rep)
	}
}

// BenchmarkEditToDiagnostics measures the time from an edit of a Go file (written, then
// synced) to gopls' diagnostics for it, with gopls warm: each iteration breaks or fixes
// main.go and waits for the result.
func BenchmarkEditToDiagnostics(b *testing.B) {
	m, dir := goModule(b)
	path := filepath.Join(dir, "main.go")
	m.Touch(path)
	broken := strings.Replace(goodMain, "greeting()", "greting()", 1)
	i := 0
	for b.Loop() {
		content := goodMain
		if i%2 == 0 {
			content = broken
		}
		i++
		m.Before("", path)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		rep := m.After(b.Context(), "", path)
		if content == broken && len(rep.Files) == 0 {
			b.Fatalf("no diagnostics for the broken file: %+v", rep)
		}
	}
}
