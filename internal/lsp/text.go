package lsp

import (
	"github.com/keel-dev/keel/internal/atomicfile"
)

// readText returns the content of path for its server. path is one the permission gate
// checked (for a Read or an edit), every link on it resolved; it is opened without following
// a link anywhere on the way, its own name included, and only a regular file is read
// ([atomicfile.ReadRegular]). keel reads it outside the sandbox while the server runs inside,
// among code the project controls: following a link a command swapped in for the file
// (rename-exchange, in a loop) handed the server a file the rules keep from the agent — a
// Read-denied secret — (adversary10 N5). A FIFO swapped in fails, it never holds the sync,
// and a file past maxText (a sparse one a command made for nothing) is an error, never read
// into memory and sent.
func readText(path string) ([]byte, error) { return atomicfile.ReadWhole(path, maxText) }

// maxText bounds the files handed to a language server; no source file comes near it.
const maxText = 64 << 20
