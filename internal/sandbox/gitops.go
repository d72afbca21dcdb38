package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A command can leave a rebase, an am, a cherry-pick, a revert or a merge in progress in a
// protected repository — or plant one, or grafts — whose continuation outside applies a
// version of a read-only path the working tree does not hold. The release names each
// ([plantWatch.checkRefs]).

// gitOps are the files git keeps while a rebase, an am, a cherry-pick, a revert or a merge is
// in progress, by what it is: a command can leave one, or plant one, whose continuation
// outside applies what it lists.
var gitOps = []struct{ path, name string }{
	{"rebase-merge", "rebase"}, {"rebase-apply", "rebase or am"}, {"sequencer", "cherry-pick or revert"},
	{"MERGE_HEAD", "merge"}, {"CHERRY_PICK_HEAD", "cherry-pick"}, {"REVERT_HEAD", "revert"},
}

// graftsFile is where git reads grafts, which it still honours.
func graftsFile(gitDir string) string {
	common, _, _ := readCommonDir(gitDir)
	return filepath.Join(common, "info", "grafts")
}

// opsState identifies the operation files in gitDir as they are.
func opsState(gitDir string) string {
	var b strings.Builder
	b.WriteString(statString(graftsFile(gitDir)))
	for _, op := range gitOps {
		b.WriteString(statDir(filepath.Join(gitDir, op.path)))
	}
	return b.String()
}

// opsWriting names the operations in progress in gitDir, begun or changed since before, whose
// continuation would apply a change to paths: the commits a rebase's or cherry-pick's to-do
// list picks, the one being cherry-picked or reverted, the heads being merged (compared with
// the working tree), the patches of an am. A rebase stopped on a conflict of its own is not
// reported: only one that would bring in another version of a read-only path.
func opsWriting(gitDir, tree string, paths []string, before string) []string {
	if opsState(gitDir) == before {
		return nil
	}
	var out []string
	add := func(name string, changed []string) {
		if len(changed) > 0 {
			out = append(out, fmt.Sprintf("a %s in progress (continuing it would write %s)", name, strings.Join(slices.Compact(slices.Sorted(slices.Values(changed))), ", ")))
		}
	}
	commits := func(oids []string) []string {
		var changed []string
		for i, oid := range oids {
			if i == maxRefsChecked {
				break
			}
			entries, err := gitPaths(gitDir, tree, append([]string{"diff-tree", "--no-commit-id", "-r", "-z", "--name-only", "--root", oid, "--"}, paths...)...)
			if err == nil {
				changed = append(changed, entries...)
			}
		}
		return changed
	}
	for _, todo := range []struct{ path, name string }{{"rebase-merge/git-rebase-todo", "rebase"}, {"sequencer/todo", "cherry-pick or revert"}} {
		add(todo.name, commits(todoCommits(filepath.Join(gitDir, todo.path))))
	}
	for _, head := range []struct{ path, name string }{{"CHERRY_PICK_HEAD", "cherry-pick"}, {"REVERT_HEAD", "revert"}} {
		add(head.name, commits(headOIDs(filepath.Join(gitDir, head.path))))
	}
	var merged []string
	for _, oid := range headOIDs(filepath.Join(gitDir, "MERGE_HEAD")) {
		if entries, err := gitEntries(gitDir, tree, append([]string{"ls-tree", "-r", "-z", oid + "^{tree}", "--"}, paths...)...); err == nil {
			merged = append(merged, differing(tree, paths, entries)...)
		}
	}
	add("merge", merged)
	add("rebase or am", patchPaths(filepath.Join(gitDir, "rebase-apply"), paths))
	if grafts := graftsFile(gitDir); statString(grafts) != "-|" && !strings.Contains(before, statString(grafts)) {
		out = append(out, grafts+", which gives commits other parents than their own (HEAD~1, a reset or a rebase may then take a commit of the command's)")
	}
	return out
}

// todoCommits are the commits a to-do list picks, in the order it lists them.
func todoCommits(path string) []string {
	b, err := readRegular(path, 64<<20)
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && slices.Contains([]string{"pick", "p", "reword", "r", "edit", "e", "squash", "s", "fixup", "f", "revert"}, f[0]) && isHex(f[1]) {
			out = append(out, f[1])
		}
	}
	return out
}

// headOIDs reads the object ids of a file such as MERGE_HEAD, one a line.
func headOIDs(path string) []string {
	b, err := readRegular(path, 1<<20)
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && isHex(f[0]) {
			out = append(out, f[0])
		}
	}
	return out
}

func isHex(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// patchPaths lists the paths under paths that the patches of an am (rebase-apply/0001, …)
// change.
func patchPaths(dir string, paths []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !isDigits(e.Name()) {
			continue
		}
		b, err := readRegular(filepath.Join(dir, e.Name()), 64<<20)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			rest, ok := strings.CutPrefix(line, "diff --git a/")
			if !ok {
				continue
			}
			path, _, _ := strings.Cut(rest, " b/")
			if withinAny(path, paths) {
				out = append(out, path)
			}
		}
	}
	return out
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
