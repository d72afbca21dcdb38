package sandbox_test

import (
	"fmt"
	"strings"
	"testing"
)

// evilCommit is the shell that makes, inside, a commit c of HEAD with .claude/settings.json
// holding evilSettings, no ref moved.
func evilCommit(t *testing.T, w objWorld) string {
	t.Helper()
	evil := gitOutStdin(t, w.ws, evilSettings, "hash-object", "-w", "--stdin")
	return fmt.Sprintf(`export GIT_INDEX_FILE=$PWD/.git/evil-index && git read-tree HEAD && git update-index --cacheinfo 100644,%s,.claude/settings.json &&
		c=$(git commit-tree $(git write-tree) -p HEAD -m evil) && rm .git/evil-index && unset GIT_INDEX_FILE`, evil)
}

// TestGitPriorCheckoutForged: git checkout - takes the branch or commit the newest
// "checkout: moving from X to Y" message of HEAD's reflog names, not an id. A line appended
// between ids that were already there, naming a commit of the command's, is reported as
// @{-1}; a rewritten line is reported; ordinary checkouts are not.
func TestGitPriorCheckoutForged(t *testing.T) { forEachLauncher(t, testGitPriorCheckoutForged) }

func testGitPriorCheckoutForged(t *testing.T) {
	w := newObjWorld(t)
	// The control: switching branches inside (same .claude/) moves @{-1}, not reported.
	if said := w.sayDone(t, `git checkout -q -b other && git checkout -q main && echo DONE`); said != "" {
		t.Errorf("ordinary checkouts were reported:\n%s", said)
	}
	said := w.sayDone(t, evilCommit(t, w)+` &&
		h=$(git rev-parse HEAD) && printf '%s %s a <a@x> 1 +0000\tcheckout: moving from %s to main\n' $h $h $c >> .git/logs/HEAD && echo DONE`)
	for _, want := range []string{"@{-1}", ".claude/settings.json"} {
		if !strings.Contains(said, want) {
			t.Errorf("%q is not reported:\n%s", want, said)
		}
	}
	if got := gitOut(t, w.ws, "rev-parse", "@{-1}:.claude/settings.json"); got == w.blob {
		t.Fatalf("the forged line does not change what git checkout - takes")
	}
	// A message rewritten in place (same length, older line): the log no longer begins as it did.
	said = w.sayDone(t, `sed -i '1s/commit (initial)/commit (lnitial)/' .git/logs/HEAD && grep -q lnitial .git/logs/HEAD && echo DONE`)
	if !strings.Contains(said, "rewrote") {
		t.Errorf("a rewritten reflog line is not reported:\n%s", said)
	}
}
