package sandbox

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/gitexec"
)

// git checkout - and @{-N} do not take an object id from HEAD's reflog but a name from its
// messages: the Nth newest "checkout: moving from X to Y" says X, a branch or a commit,
// which git then resolves. A command can append such a line naming a commit of its own
// between ids that were there already, which the id comparison ([changedRefs]) does not see.
// So what the newest of those name is read as git reads it, and compared like a ref.

// maxPriorCheckouts is how many of @{-1}, @{-2}, … keel reads: the ones a user types.
const maxPriorCheckouts = 5

// priorCheckouts is what @{-1} … @{-maxPriorCheckouts} name in gitDir, as git resolves them;
// "" where git names nothing.
func priorCheckouts(gitDir string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	cmd, err := gitexec.Runner{}.Command(ctx, gitDir, "--git-dir="+gitDir, "cat-file", "--batch-check")
	if err != nil {
		return nil
	}
	var in strings.Builder
	for n := 1; n <= maxPriorCheckouts; n++ {
		fmt.Fprintf(&in, "@{-%d}\n", n)
	}
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		slog.Warn("sandbox: could not read a repository's prior checkouts", "gitdir", gitDir, "err", err)
		return nil
	}
	oids := make([]string, maxPriorCheckouts)
	for i, line := range strings.SplitN(string(out), "\n", maxPriorCheckouts+1) {
		// "<oid> <type> <size>", or "@{-N} missing".
		if i < maxPriorCheckouts {
			if f := strings.Fields(line); len(f) == 3 && isHex(f[0]) {
				oids[i] = f[0]
			}
		}
	}
	return oids
}

// headLog is what HEAD's reflog held: its length and the hash of its bytes. git appends to
// it; rewriting an entry (its message above all) is how a command would change what
// git checkout - takes without a new id.
type headLog struct {
	size int64
	sum  [sha256.Size]byte
	ok   bool
}

// readHeadLog reads gitDir's logs/HEAD, and reports whether it no longer begins with the bytes
// it held when it was before: entries rewritten or removed, not only added.
func readHeadLog(gitDir string, before headLog) (now headLog, rewrote bool) {
	b, err := readRegular(filepath.Join(gitDir, "logs", "HEAD"), 64<<20)
	if err != nil {
		return headLog{}, false
	}
	now = headLog{size: int64(len(b)), sum: sha256.Sum256(b), ok: true}
	if !before.ok || now.size == before.size && now.sum == before.sum {
		return now, false
	}
	return now, now.size < before.size || sha256.Sum256(b[:before.size]) != before.sum
}
