//go:build !unix

package worktree

// lockFile does not lock across processes here: within one process, the Manager's mutex
// still serializes its git commands.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
