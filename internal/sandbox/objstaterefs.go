package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/gitexec"
)

// Besides refs and reflogs, git resolves names from files at the top of a gitdir — ORIG_HEAD,
// FETCH_HEAD (whose every line names a fetched object), MERGE_HEAD, CHERRY_PICK_HEAD,
// REVERT_HEAD, AUTO_MERGE (a tree), BISECT_* — and from the state of a rebase, am or
// cherry-pick in progress (rebase-merge/orig-head and onto, rebase-apply/*, sequencer/*).
// `git log --all` walks none of them, yet `git cat-file -p ORIG_HEAD:secrets/token` reads
// what they reach; so [hiddenBlobs] walks every object named in them too ([stateObjects]) —
// in every gitdir sharing the object store, since a linked worktree's are read from any
// (`git cat-file -p worktrees/W/ORIG_HEAD:secrets/token`).

// stateDirs are the directories of a gitdir holding the state of an operation in progress.
var stateDirs = []string{"rebase-merge", "rebase-apply", "sequencer"}

// knownStateRefs are the pseudo-refs git writes at the top of a gitdir. They are read by
// name, whatever else is there: files a command writes cannot push them out of the walk.
var knownStateRefs = []string{
	"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
	"AUTO_MERGE", "MERGE_AUTOSTASH", "BISECT_HEAD", "BISECT_EXPECTED_REV", "BISECT_START", "BISECT_LOG",
	"BISECT_ANCESTORS_OK", "BISECT_TERMS", "BISECT_NAMES", "BISECT_FIRST_PARENT", "NOTES_MERGE_PARTIAL",
}

const (
	// maxStateFile bounds one such file keel reads (a FETCH_HEAD of a large fetch runs to
	// megabytes); maxStateBytes all of them. Past either the walk fails, and the object store
	// is masked whole for commands ([objRepo.sealed]).
	maxStateFile  = 16 << 20
	maxStateBytes = 64 << 20
	// minAbbrev is the shortest abbreviated object name git writes (core.abbrev's default).
	minAbbrev = 7
)

// storeGitDirs are the gitdirs sharing gitDir's object store: its common directory and every
// linked worktree's (common/worktrees/*), each with pseudo-refs and state of its own that git
// resolves from any of them (`worktrees/W/ORIG_HEAD`).
func storeGitDirs(gitDir string) []string {
	common, _, _ := readCommonDir(gitDir)
	dirs := []string{common}
	if gitDir != common {
		dirs = append(dirs, gitDir)
	}
	entries, _ := os.ReadDir(filepath.Join(common, "worktrees"))
	for _, e := range entries {
		if d := filepath.Join(common, "worktrees", e.Name()); e.IsDir() && d != gitDir {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// stateRefFiles are the files of the gitdirs sharing gitDir's object store ([storeGitDirs])
// that may name objects git resolves: the knownStateRefs, every other file at a gitdir's top
// named as git names a pseudo-ref (capitals, digits, '_' and '-'), and those in stateDirs.
// Past maxRefFiles of all but the known ones — a command can write thousands — it fails: the
// walk then fails, and the store is masked whole, rather than leave any out.
func stateRefFiles(gitDir string) ([]string, error) {
	var out []string
	others := 0
	for _, g := range storeGitDirs(gitDir) {
		for _, name := range knownStateRefs {
			out = append(out, filepath.Join(g, name))
		}
		var more []string
		entries, _ := os.ReadDir(g)
		for _, e := range entries {
			if pseudoRefName(e.Name()) && !slices.Contains(knownStateRefs, e.Name()) {
				more = append(more, filepath.Join(g, e.Name()))
			}
		}
		for _, d := range stateDirs {
			entries, _ := os.ReadDir(filepath.Join(g, d))
			for _, e := range entries {
				more = append(more, filepath.Join(g, d, e.Name()))
			}
		}
		if others += len(more) + 1; others > maxRefFiles {
			return out, fmt.Errorf("more than %d files named as pseudo-refs or holding an operation's state in the gitdirs of %s, past what keel reads: remove those git did not write", maxRefFiles, commonOf(gitDir))
		}
		out = append(out, more...)
	}
	return out, nil
}

// commonOf is gitDir's common directory.
func commonOf(gitDir string) string {
	c, _, _ := readCommonDir(gitDir)
	return c
}

// pseudoRefName reports whether a file at the top of a gitdir is named as a pseudo-ref.
func pseudoRefName(name string) bool {
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	for _, c := range name {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// stateFingerprint identifies the state of the stateRefFiles of the gitdirs sharing gitDir's
// object store, and of the directories holding them, for [maskedRepo.historyKey]: one
// written, added or removed, or a worktree added, is walked again. Past the bound it still
// changes with the known pseudo-refs (the walk fails then all the same).
func stateFingerprint(gitDir string) string {
	var b strings.Builder
	b.WriteString(statString(filepath.Join(commonOf(gitDir), "worktrees")))
	files, err := stateRefFiles(gitDir)
	if err != nil {
		b.WriteString("\x00past the bound\x00")
	}
	// Not the gitdirs themselves: git writes there at every status (index.lock).
	for _, g := range storeGitDirs(gitDir) {
		for _, d := range stateDirs {
			b.WriteString(statString(filepath.Join(g, d)))
		}
	}
	for _, f := range files {
		b.WriteString(statString(f))
	}
	return b.String()
}

// stateObjects are the object names in the stateRefFiles of the gitdirs sharing gitDir's
// object store: every run of minAbbrev to 64 hexadecimal digits, whatever the file's format
// (FETCH_HEAD's lines, a to-do list's abbreviated commits, BISECT_LOG's comments). One that names no object, or more than one,
// is dropped later.
func stateObjects(gitDir string) ([]string, error) {
	files, err := stateRefFiles(gitDir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	total := 0
	for _, f := range files {
		b, err := readRegular(f, maxStateFile)
		switch {
		case errors.Is(err, errTooLarge):
			return nil, fmt.Errorf("%s is past the %d bytes keel reads", f, maxStateFile)
		case err != nil:
			continue // gone, a directory, a link: git reads no object name from it either
		}
		if total += len(b); total > maxStateBytes {
			return nil, fmt.Errorf("the files of %s naming objects are past the %d bytes keel reads", gitDir, maxStateBytes)
		}
		for _, run := range bytes.FieldsFunc(b, func(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }) {
			if len(run) >= minAbbrev && len(run) <= 64 {
				seen[string(run)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// stateCommitsAndTrees sorts ids into the commits and trees they name (a tag peeled to what it
// tags), leaving out what names no object, or a blob.
func stateCommitsAndTrees(ctx context.Context, run gitexec.Runner, pre []string, tree string, ids []string) (commits, trees []string, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	var in bytes.Buffer
	for _, id := range ids {
		in.WriteString(id + "^{}\n")
	}
	out, err := gitInput(ctx, run, tree, &in, append(pre, "cat-file", "--batch-check=%(objecttype) %(objectname)")...)
	if err != nil {
		return nil, nil, err
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		switch typ, id, _ := strings.Cut(line, " "); typ {
		case "commit":
			commits = append(commits, id)
		case "tree":
			trees = append(trees, id)
		}
	}
	return commits, trees, nil
}

// gitInput runs git with args in dir, in on its standard input, and returns its standard
// output.
func gitInput(ctx context.Context, run gitexec.Runner, dir string, in *bytes.Buffer, args ...string) ([]byte, error) {
	cmd, err := run.Command(ctx, dir, args...)
	if err != nil {
		return nil, err
	}
	cmd.Stdin = in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
