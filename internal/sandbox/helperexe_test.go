package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHelperExecutable: keel-sandbox beside the program is the helper, whether or not the
// program can be one itself (it starts sooner); without it, the program that called Dispatch.
func TestHelperExecutable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := helperExecutable(); err != nil || got != self {
		t.Fatalf("without keel-sandbox: %q, %v; want this test binary", got, err)
	}
	beside := filepath.Join(filepath.Dir(self), HelperProgram)
	if _, err := os.Lstat(beside); err == nil {
		t.Skipf("%s exists already", beside)
	}
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Skipf("cannot write beside the test binary: %v", err)
	}
	t.Cleanup(func() { os.Remove(beside) })
	if got, err := helperExecutable(); err != nil || got != beside {
		t.Errorf("with keel-sandbox beside: %q, %v", got, err)
	}
}
