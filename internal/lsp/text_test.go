package lsp

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// TestReadTextRefusesHugeFiles: a file past maxText — a sparse one a command made for no
// disk — is an error for the server's sync, never read into memory and sent.
func TestReadTextRefusesHugeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.go")
	if err := os.WriteFile(path, []byte("package huge\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readText(path); err != nil || string(b) != "package huge\n" {
		t.Fatalf("small file: %q, %v", b, err)
	}
	if err := os.Truncate(path, 4*maxText); err != nil {
		t.Fatal(err)
	}
	if _, err := readText(path); !errors.Is(err, atomicfile.ErrTooLarge) {
		t.Errorf("huge file: err = %v", err)
	}
}
