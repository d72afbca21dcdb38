package companion_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/companion"
)

func executable(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Beside the given keel binary first, then PATH; a directory of that name is no program.
func TestFindOrder(t *testing.T) {
	keelDir, pathDir := t.TempDir(), t.TempDir()
	keel := executable(t, keelDir, "keel")
	onPath := executable(t, pathDir, "keel-nats")
	t.Setenv("PATH", pathDir)

	if got, err := companion.Find("keel-nats", keel); err != nil || got != onPath {
		t.Errorf("only on PATH: Find = %q, %v; want %s", got, err, onPath)
	}
	beside := executable(t, keelDir, "keel-nats")
	if got, err := companion.Find("keel-nats", keel); err != nil || got != beside {
		t.Errorf("beside keel and on PATH: Find = %q, %v; want %s", got, err, beside)
	}
	if err := os.Mkdir(filepath.Join(keelDir, "keel-tui"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := companion.Find("keel-tui", keel); err == nil {
		t.Errorf("keel-tui is a directory beside keel: Find = %q, want an error", got)
	}
}

// Missing: the error names the program and where it looked.
func TestFindMissing(t *testing.T) {
	keelDir := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	_, err := companion.Find("keel-nats", filepath.Join(keelDir, "keel"))
	if !errors.Is(err, companion.ErrNotFound) {
		t.Fatalf("Find of a missing program: %v; want ErrNotFound", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "keel-nats") || !strings.Contains(msg, keelDir) || !strings.Contains(msg, "PATH") {
		t.Errorf("error %q should name keel-nats, %s and PATH", msg, keelDir)
	}
}

// keel-tui's background agents and teammates run under the plain keel beside it.
func TestKeel(t *testing.T) {
	dir := t.TempDir()
	tui := executable(t, dir, "keel-tui")
	if got := companion.Keel(tui); got != tui {
		t.Errorf("no keel beside keel-tui: Keel = %s, want keel-tui itself", got)
	}
	keel := executable(t, dir, "keel")
	if got := companion.Keel(tui); got != keel {
		t.Errorf("Keel(keel-tui) = %s, want %s", got, keel)
	}
	if got := companion.Keel(keel); got != keel {
		t.Errorf("Keel(keel) = %s, want itself", got)
	}
}

// Beside finds a program only in this executable's directory: this test binary itself is
// found there, a program that is only on PATH is not.
func TestBeside(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := companion.Beside(filepath.Base(self)); !ok || p != self {
		t.Errorf("Beside(this test binary) = %q, %v; want %q, true", p, ok, self)
	}
	if p, ok := companion.Beside("sh"); ok {
		t.Errorf("Beside(sh) = %q, true; sh is on PATH, not beside the test binary", p)
	}
}
