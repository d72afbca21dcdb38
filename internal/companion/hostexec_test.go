package companion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/hostexec"
)

// TestFindSkipsWritablePath: a companion found on PATH is never one in a directory sandboxed
// commands can write, where one of them could have put it; the one further on PATH is.
func TestFindSkipsWritablePath(t *testing.T) {
	ws, sys := t.TempDir(), t.TempDir()
	const name = "keel-companion-pathtest"
	for _, d := range []string{ws, sys} {
		if err := os.WriteFile(filepath.Join(d, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", ws+string(os.PathListSeparator)+sys)
	hostexec.Guard(func(p string) bool { return p == ws || strings.HasPrefix(p, ws+"/") })
	if got, err := Find(name); err != nil || got != filepath.Join(sys, name) {
		t.Errorf("Find = %q, %v; want the one in %s", got, err, sys)
	}
}
