package hostexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func program(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func reset(t *testing.T) {
	mu.Lock()
	saved := guards
	guards = nil
	clear(found)
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		guards = saved
		clear(found)
		mu.Unlock()
	})
}

// TestPathSkipsWritable: a program planted in a PATH entry a sandboxed command can write (an
// activated .venv/bin first on PATH) is never the one keel runs, nor one reached through a link
// into the workspace from a directory outside it; the one further on PATH is.
func TestPathSkipsWritable(t *testing.T) {
	reset(t)
	ws, sys := t.TempDir(), t.TempDir()
	venv := filepath.Join(ws, ".venv", "bin")
	program(t, venv, "git")
	want := program(t, filepath.Join(sys, "usr"), "git")
	linked := filepath.Join(sys, "links")
	os.MkdirAll(linked, 0o755)
	if err := os.Symlink(filepath.Join(venv, "git"), filepath.Join(linked, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", strings.Join([]string{venv, "relative", linked, filepath.Join(sys, "usr")}, string(os.PathListSeparator)))
	if p, err := Path("git"); err != nil || p != filepath.Join(venv, "git") {
		t.Fatalf("before any sandbox: %q, %v; want PATH's first", p, err)
	}
	Guard(func(p string) bool { return p == ws || strings.HasPrefix(p, ws+"/") })
	if p, err := Path("git"); err != nil || p != want {
		t.Fatalf("with the workspace guarded: %q, %v; want %s", p, err, want)
	}
	if got := Exposed(os.Getenv("PATH"), guards[0]); len(got) != 1 || got[0] != venv {
		t.Errorf("Exposed = %q, want [%s]", got, venv)
	}
	cmd := Command(context.Background(), "git", "version")
	if cmd.Path != want || cmd.Err != nil {
		t.Errorf("Command: %q, %v", cmd.Path, cmd.Err)
	}
	t.Setenv("PATH", venv)
	if _, err := Path("git"); !errors.Is(err, ErrOnlyWritable) {
		t.Errorf("only in the workspace: %v, want ErrOnlyWritable", err)
	}
	if cmd := Command(context.Background(), "git"); cmd.Err == nil || cmd.Start() == nil {
		t.Errorf("Command of a program only in the workspace starts")
	}
}
