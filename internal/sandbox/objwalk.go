package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/gitexec"
)

// `git log --all --reflog` dies at the first ref that names no object ("fatal: bad object
// refs/heads/zz"), or a tag whose object is missing, and --ignore-missing does not change
// that for --all. A command writes such a ref in one line, and a pack put aside leaves one
// behind; so [walkHistory] gathers where the walk starts itself ([walkTips]), has git sort
// them ([stateCommitsAndTrees]: what names no object is dropped there) and walks only the
// commits and trees that are there.

const (
	// maxReflogFiles and maxReflogBytes bound the reflogs keel reads for the walk's starting
	// points; past either the walk fails (and the object store is masked whole for commands:
	// [objRepo.sealed]).
	maxReflogFiles = 1 << 16
	maxReflogBytes = 512 << 20
)

// walkTips are the names the walk of gitDir's history starts from, as `git log --all
// --reflog` takes them: every ref's object (git for-each-ref lists one that names nothing
// too), HEAD and each linked worktree's, every object the reflogs name, and those the
// pseudo-refs and state files name ([stateObjects]). Some may name nothing.
func walkTips(ctx context.Context, run gitexec.Runner, pre []string, gitDir, tree string) ([]string, error) {
	named, err := stateObjects(gitDir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{"HEAD": true}
	for _, id := range named {
		seen[id] = true
	}
	refs, err := run.Output(ctx, tree, append(pre, "for-each-ref", "--format=%(objectname)")...)
	if err != nil {
		return nil, fmt.Errorf("list the refs: %w", err)
	}
	for id := range bytes.FieldsSeq(refs) {
		seen[string(id)] = true
	}
	common, _, _ := readCommonDir(gitDir)
	files := []string{filepath.Join(gitDir, "logs")}
	if common != gitDir {
		files = append(files, filepath.Join(common, "logs"))
	}
	others, _ := filepath.Glob(filepath.Join(common, "worktrees", "*"))
	for _, w := range others {
		files = append(files, filepath.Join(w, "HEAD"), filepath.Join(w, "logs"))
	}
	if err := reflogObjects(files, seen); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// reflogObjects marks in seen every full object name in the files below roots (reflogs, and
// linked worktrees' HEADs), bounded by maxReflogFiles and maxReflogBytes.
func reflogObjects(roots []string, seen map[string]bool) error {
	files, total := 0, 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil // gone, or a link: git reads no reflog through one either
			}
			if files++; files > maxReflogFiles {
				return fmt.Errorf("more than %d reflogs, past what keel reads", maxReflogFiles)
			}
			b, err := readRegular(path, maxReflogBytes)
			if errors.Is(err, errTooLarge) {
				return fmt.Errorf("%s is past the %d bytes keel reads", path, maxReflogBytes)
			} else if err != nil {
				return nil
			}
			if total += len(b); total > maxReflogBytes {
				return fmt.Errorf("the reflogs are past the %d bytes keel reads", maxReflogBytes)
			}
			for _, run := range bytes.FieldsFunc(b, func(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }) {
				if len(run) == 40 || len(run) == 64 {
					seen[string(run)] = true
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// walkHistory marks in found the blobs at specs in the history of every ref, reflog entry
// and object gitDir's pseudo-refs and state files name ([walkTips]), those that name no
// object left out; a tree they name (AUTO_MERGE) is read whole.
func walkHistory(ctx context.Context, run gitexec.Runner, pre []string, gitDir, tree string, specs []string, found map[string]bool) error {
	tips, err := walkTips(ctx, run, pre, gitDir, tree)
	if err != nil {
		return err
	}
	commits, trees, err := stateCommitsAndTrees(ctx, run, pre, tree, tips)
	if err != nil {
		return err
	}
	var in bytes.Buffer
	if len(commits) > 0 { // none given, git log would walk HEAD, and fail where it has none
		for _, c := range commits {
			in.WriteString(c + "\n")
		}
		log, err := gitInput(ctx, run, tree, &in, append(append(pre, "log", "--stdin", "--ignore-missing", "--full-history",
			"--diff-merges=separate", "--root", "--no-show-signature", "--no-renames", "--raw", "--no-abbrev", "-z", "--format=", "--"), specs...)...)
		if err != nil {
			return err
		}
		rawBlobs(log, found)
	}
	if len(trees) == 0 {
		return nil
	}
	in.Reset()
	for _, t := range trees {
		in.WriteString(emptyTree(t) + " " + t + "\n")
	}
	diff, err := gitInput(ctx, run, tree, &in, append(append(pre, "diff-tree", "--stdin", "-r", "--no-renames", "--raw", "--no-abbrev", "-z", "--"), specs...)...)
	if err != nil {
		return err
	}
	rawBlobs(diff, found)
	return nil
}

// rawBlobs marks in found the blobs of git's -z --raw output: ":<mode> <mode> <id> <id>
// <status>" records, the line diff-tree --stdin echoes before each pair's cut off.
func rawBlobs(out []byte, found map[string]bool) {
	for f := range bytes.SplitSeq(out, []byte{0}) {
		f = f[bytes.LastIndexByte(f, '\n')+1:]
		fields := strings.Fields(string(f))
		if len(fields) != 5 || !strings.HasPrefix(fields[0], ":") {
			continue
		}
		for i, id := range fields[2:4] {
			if blobMode(strings.TrimPrefix(fields[i], ":")) {
				found[id] = true
			}
		}
	}
}

// emptyTree is the empty tree's name in the repository whose objects are named as id is.
func emptyTree(id string) string {
	if len(id) == 64 {
		return "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
	}
	return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
}
