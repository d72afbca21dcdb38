package lsp

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// readText returns the content of path for its server. path is one the permission gate
// checked (for a Read or an edit), every link on it resolved; it is opened without following
// a link anywhere on the way, its own name included, and only a regular file is read. keel
// reads it outside the sandbox while the server runs inside, among code the project controls:
// following a link a command swapped in for the file (rename-exchange, in a loop) handed the
// server a file the rules keep from the agent — a Read-denied secret — (adversary10 N5).
// O_NONBLOCK: a FIFO swapped in fails here, it never holds the sync.
func readText(path string) ([]byte, error) {
	f, err := atomicfile.OpenNoLinks(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return io.ReadAll(f)
}
