package lsp

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestGoplsInSandbox: gopls works confined to a workspace-write sandbox of its module, as a
// session runs it (sandbox.wrapLspServers): its caches are the toolchain caches the sandbox
// lets commands write, and an edit's type error comes back as outside.
func TestGoplsInSandbox(t *testing.T) {
	m, dir := goModule(t)
	home, _ := os.UserHomeDir()
	sb := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{dir}, Home: home,
		Caches: sandbox.Caches(home, os.Getenv)}), sandbox.Options{})
	if err := sb.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	confined := 0
	m.opts.Confine = func(cmd *exec.Cmd) (Confined, error) {
		confined++
		run, err := sb.Confine(cmd)
		if err != nil {
			return nil, err
		}
		return run, nil
	}
	path := filepath.Join(dir, "main.go")
	opened(t, m, path)
	m.Before("", path)
	write(t, path, strings.Replace(goodMain, "greeting()", "greting()", 1))
	rep := m.After(t.Context(), "", path)
	if rep.Note != "" || len(rep.Files) != 1 || !strings.Contains(rep.Files[0].Diagnostics[0].Message, "undefined: greting") {
		t.Fatalf("report = %+v, want gopls' undefined name", rep)
	}
	if confined != 1 {
		t.Errorf("gopls started %d times through the sandbox, want once", confined)
	}
}
