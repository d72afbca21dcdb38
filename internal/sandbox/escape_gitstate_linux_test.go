package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// TestGitStateThatWouldWriteReadOnlyPaths: a command cannot write .claude/ or .mcp.json in
// the working tree, but it can commit another version of them to a branch, or stage one in
// the index, which the user's next git switch or restore would write outside the sandbox. As
// the command is released, its result names each such ref and the index, with the paths;
// ordinary commits and branches, and a commit of the working tree's own version of a
// read-only file, are not reported.
func TestGitStateThatWouldWriteReadOnlyPaths(t *testing.T) {
	forEachLauncher(t, testGitStateThatWouldWriteReadOnlyPaths)
}

func testGitStateThatWouldWriteReadOnlyPaths(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := filepath.Join(base, "ws")
	newRepo(t, ws)
	write(t, filepath.Join(ws, ".claude", "settings.json"), "{}\n")
	git(t, ws, "add", "-A")
	git(t, ws, "commit", "-q", "-m", "settings")
	w := gitWorld(t, ws, false)
	run := func(script string) (string, string) {
		t.Helper()
		out, said := w.say(t, `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x
`+script)
		if !strings.Contains(out, "DONE") {
			t.Fatalf("the script failed inside:\n%s", out)
		}
		return out, said
	}

	// The controls: a commit and a branch that leave the read-only paths as they are, and a
	// commit of the working tree's own version of one.
	_, said := run(`echo hi > a.txt && git add a.txt && git commit -qm a && git branch feature && git switch -q -c other && git switch -q main &&
		git add .claude/settings.json && git commit -q --allow-empty -m same && echo DONE`)
	if said != "" {
		t.Errorf("ordinary commits and branches were reported:\n%s", said)
	}

	// A branch whose .claude/settings.json runs a hook, made with git's plumbing.
	_, said = run(`blob=$(printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}\n' | git hash-object -w --stdin) &&
		export GIT_INDEX_FILE=$PWD/.git/evil-index && git read-tree HEAD && git update-index --cacheinfo 100644,$blob,.claude/settings.json &&
		git update-index --add --cacheinfo 100644,$blob,.mcp.json &&
		c=$(git commit-tree $(git write-tree) -p HEAD -m evil) && git update-ref refs/heads/evil $c && rm .git/evil-index && echo DONE`)
	for _, want := range []string{"In " + ws, "refs/heads/evil", ".claude/settings.json", ".mcp.json", "git switch"} {
		if !strings.Contains(said, want) {
			t.Errorf("the branch that would write .claude/settings.json is not reported with %q:\n%s", want, said)
		}
	}
	if strings.Contains(said, "the index") || strings.Contains(said, "refs/heads/main") {
		t.Errorf("the report names more than the branch:\n%s", said)
	}

	// A branch without the settings file: switching to it deletes the file, and its rules.
	_, said = run(`export GIT_INDEX_FILE=$PWD/.git/gone-index && git read-tree HEAD && git rm -q --cached .claude/settings.json &&
		git update-ref refs/heads/gone $(git commit-tree $(git write-tree) -p HEAD -m gone) && rm .git/gone-index && echo DONE`)
	if !strings.Contains(said, "refs/heads/gone (git switch, checkout, merge or reset would remove .claude/settings.json)") {
		t.Errorf("the branch that would remove .claude/settings.json is not reported as such:\n%s", said)
	}

	// The same content staged in the index.
	_, said = run(`git update-index --cacheinfo 100644,$(git rev-parse refs/heads/evil:.claude/settings.json),.claude/settings.json && echo DONE`)
	if !strings.Contains(said, "the index") || !strings.Contains(said, ".claude/settings.json") || strings.Contains(said, "refs/heads/evil") {
		t.Errorf("the staged .claude/settings.json is not reported (or more is):\n%s", said)
	}
	// A cherry-pick of the branch, planted as if it had stopped: continuing it outside would
	// write what the branch changes.
	_, said = run(`git update-index --cacheinfo 100644,$(git rev-parse HEAD:.claude/settings.json),.claude/settings.json &&
		git rev-parse refs/heads/evil > .git/CHERRY_PICK_HEAD && echo DONE`)
	if !strings.Contains(said, "a cherry-pick in progress (continuing it would write .claude/settings.json, .mcp.json)") {
		t.Errorf("the planted cherry-pick is not reported:\n%s", said)
	}
	_, said = run(`rm .git/CHERRY_PICK_HEAD && git rev-parse refs/heads/evil > .git/MERGE_HEAD && echo DONE`)
	if !strings.Contains(said, "a merge in progress (continuing it would write .claude/settings.json, .mcp.json)") {
		t.Errorf("the planted merge is not reported:\n%s", said)
	}
	// A ref rewritten in place alone: its directory does not change.
	_, said = run(`rm .git/MERGE_HEAD && git rev-parse refs/heads/evil > .git/refs/heads/other && echo DONE`)
	if !strings.Contains(said, "refs/heads/other (") {
		t.Errorf("a ref rewritten in place is not reported:\n%s", said)
	}
	// A ref rewritten in place, ORIG_HEAD, an older stash entry, grafts.
	_, said = run(`git rev-parse refs/heads/evil > .git/refs/heads/feature && git rev-parse refs/heads/evil > .git/ORIG_HEAD &&
		mkdir -p .git/logs/refs && printf '%s %s a <a@x> 1 +0000\tforged\n' $(git rev-parse HEAD) $(git rev-parse refs/heads/evil) >> .git/logs/refs/stash &&
		printf '%s %s\n' $(git rev-parse HEAD) $(git rev-parse refs/heads/evil) > .git/info/grafts && echo DONE`)
	for _, want := range []string{"refs/heads/feature (", "ORIG_HEAD (line 1) (", "stash@{0} (", filepath.Join(ws, ".git", "info", "grafts") + ", which gives commits other parents"} {
		if !strings.Contains(said, want) {
			t.Errorf("%q is not reported:\n%s", want, said)
		}
	}
	_, said = run(`rm .git/info/grafts && git rev-parse main > .git/CHERRY_PICK_HEAD && echo DONE`)
	if strings.Contains(said, "in progress") {
		t.Errorf("a cherry-pick that changes no read-only path was reported:\n%s", said)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.json")); string(got) != "{}\n" {
		t.Errorf(".claude/settings.json changed in the working tree: %q", got)
	}
}
