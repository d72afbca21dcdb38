package sandbox

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/gitexec"
)

// The backstop where the object store was not checked whole — past the loose objects keel
// keeps, a pack it could not move aside, or the first time a keel process sees the store,
// whose state before is not known (keel may have died, killed, while a command's background
// job forged an object): git itself is asked, in one git cat-file --batch, for every object
// on the way from the refs to the read-only paths — each ref's commit, its root tree, the
// trees down to each path and what each path holds — and for the blob each read-only file's
// content names, and each is hashed again. Whatever route git took to read it (a loose object,
// a pack, an alternate store, a replace ref), content that does not hash to its name is
// forged.

// maxForgeCheck bounds the working-tree files forgedBlobs asks git for.
const maxForgeCheck = 1024

// forgedBlobs lists the files under paths, relative to the working tree, whose object — named
// by what the file holds, as the ref and index checks take it to be — git reads with other
// content: what a checkout of any commit holding the file as it is would write instead.
func forgedBlobs(gitDir, tree string, paths []string) []string {
	files, _ := forgedObjects(gitDir, tree, paths, nil)
	return files
}

// forgedObjects is [forgedBlobs], and for each of revs (refs or object ids) the objects git
// reads on the way from it to paths and to each read-only file: "HEAD^{tree}", "HEAD:.claude",
// "HEAD:.claude/settings.json", named so in onPath.
func forgedObjects(gitDir, tree string, paths, revs []string) (files, onPath []string) {
	byOID := map[string][]string{}
	var wt []string
	n := 0
	for _, p := range paths {
		_ = filepath.WalkDir(filepath.Join(tree, filepath.FromSlash(p)), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if n++; n > maxForgeCheck {
				return filepath.SkipAll
			}
			rel, _ := filepath.Rel(tree, path)
			wt = append(wt, filepath.ToSlash(rel))
			// Either hash: the repository's object format is not read here.
			for _, hexLen := range []int{2 * sha1.Size, 2 * sha256.Size} {
				if oid, ok := worktreeOID(path, hexLen); ok {
					byOID[oid] = append(byOID[oid], filepath.ToSlash(rel))
				}
			}
			return nil
		})
	}
	queries := slices.Sorted(func(yield func(string) bool) {
		for oid := range byOID {
			if !yield(oid) {
				return
			}
		}
	})
	for _, rev := range revs {
		queries = append(queries, revPath(rev, paths, wt)...)
	}
	if len(queries) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	cmd, err := gitexec.Runner{}.Command(ctx, tree, "--git-dir="+gitDir, "cat-file", "--batch")
	if err != nil {
		return nil, nil
	}
	cmd.Stdin = strings.NewReader(strings.Join(queries, "\n") + "\n")
	// Read as it comes, each object hashed and dropped: a ref's version of a path may be large.
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil
	}
	if err := cmd.Start(); err != nil {
		slog.Warn("sandbox: could not read a repository's objects", "gitdir", gitDir, "err", err)
		return nil, nil
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	out := bufio.NewReader(stdout)
	for _, q := range queries {
		// "<oid> <type> <size>\n<content>\n", or "<query> missing\n".
		line, err := out.ReadString('\n')
		if err != nil {
			break
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			continue // missing: not in the store, so nothing to check out
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		h := newHash(len(f[0]) / 2)
		if err != nil || size < 0 || h == nil {
			break
		}
		fmt.Fprintf(h, "%s %d\x00", f[1], size)
		if n, err := io.CopyN(h, out, size); err != nil || n != size {
			break
		}
		if c, err := out.ReadByte(); err != nil || c != '\n' {
			break
		}
		sum := hex.EncodeToString(h.Sum(nil))
		named, isOID := byOID[q]
		switch {
		case isOID && (f[0] != q || sum != q):
			files = append(files, named...)
		case !isOID && sum != f[0]:
			onPath = append(onPath, fmt.Sprintf("%s (object %s, a %s)", q, f[0], f[1]))
		}
	}
	slices.Sort(files)
	return slices.Compact(files), onPath
}

// revPath lists what git reads from rev to each of paths and files: rev, its tree, each
// directory on the way, each path. Paths a line break would split are left out: cat-file
// reads a query a line.
func revPath(rev string, paths, files []string) []string {
	out := []string{rev, rev + "^{tree}"}
	seen := map[string]bool{}
	for _, p := range slices.Concat(paths, files) {
		for dir := p; dir != "." && dir != "/" && dir != ""; dir = path.Dir(dir) {
			if seen[dir] || strings.ContainsAny(dir, "\n\r") {
				break
			}
			seen[dir] = true
			out = append(out, rev+":"+dir)
		}
	}
	return out
}

// backstopRevs are the refs the backstop follows in gitDir: HEAD, @{-N}, the branches, the
// stash and the tags first ([refRank]), as they are now (read again when their files changed
// since start), one name for each object, at most maxRefsChecked.
func backstopRevs(gitDir string, start refsMark) []string {
	refs := start.refs
	if refs == nil || refsFingerprint(gitDir) != start.fp {
		if now, err := readRefs(gitDir); err == nil {
			refs = now
		}
	}
	names := slices.SortedFunc(maps.Keys(refs), func(a, b string) int {
		return cmp.Or(cmp.Compare(refRank(a), refRank(b)), cmp.Compare(a, b))
	})
	var revs []string
	seen := map[string]bool{}
	for _, name := range names {
		oid := refs[name]
		if seen[oid] || len(revs) == maxRefsChecked {
			continue
		}
		seen[oid] = true
		if strings.ContainsAny(name, " \n") {
			name = oid // ORIG_HEAD (line 1): not a name git reads
		}
		revs = append(revs, name)
	}
	return revs
}
