package session

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// maxGitFile caps what gitBranch reads of .git or HEAD: either is one short line.
const maxGitFile = 4 << 10

// gitBranch is the branch checked out in the repository holding dir, read from its HEAD file
// (no git process: it is asked on every session start), or "" outside a repository and on a
// detached HEAD. A worktree's .git file points to its own HEAD. Both are read as regular files
// only, never waiting ([atomicfile.ReadResolved]): a FIFO a command left there held keel's
// start for ever, past SIGTERM (adversary11 F7).
func gitBranch(dir string) string {
	for d := dir; ; {
		gitPath := filepath.Join(d, ".git")
		if fi, err := os.Stat(gitPath); err == nil {
			if !fi.IsDir() {
				b, err := atomicfile.ReadResolved(gitPath, maxGitFile)
				rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
				if err != nil || !ok {
					return ""
				}
				gitPath = strings.TrimSpace(rest)
				if !filepath.IsAbs(gitPath) {
					gitPath = filepath.Join(d, gitPath)
				}
			}
			head, err := atomicfile.ReadResolved(filepath.Join(gitPath, "HEAD"), maxGitFile)
			if err != nil {
				return ""
			}
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: refs/heads/")
			if !ok {
				return ""
			}
			return ref
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}
