package memory

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/transcript"
)

// Auto memory is the notes the model keeps for itself, per project, across sessions — Claude
// Code's layout: a directory under the projects directory of keel's home with MEMORY.md as
// its index (the head of which joins the system prompt) and topic files the model reads when
// it needs them.
const (
	// AutoIndexName is the index file of an auto memory directory.
	AutoIndexName = "MEMORY.md"
	// AutoIndexLines and AutoIndexBytes bound what of the index joins the prompt (Claude
	// Code's limits): the index is meant to be short, the details live in topic files.
	AutoIndexLines = 200
	AutoIndexBytes = 25 << 10
)

// AutoDir returns the auto memory directory of the project cwd belongs to:
// $KEEL_HOME/projects/<sanitised root>/memory, beside the project's transcripts. The root is
// the repository's main work tree, so every worktree of one repository shares one memory; a
// directory outside a repository is its own root.
func AutoDir(keelHome, cwd string) string {
	return filepath.Join(transcript.ProjectDir(keelHome, canonicalRoot(cwd)), "memory")
}

// maxGitFile caps what canonicalRoot reads of .git, commondir and gitdir: each is one line.
// They are read as regular files only, never waiting ([atomicfile.ReadResolved]): a command
// can leave a FIFO as a project's .git, and a plain read held keel's start for ever.
const maxGitFile = 4 << 10

// canonicalRoot is the main work tree of the repository cwd is in: for a linked worktree
// (.git is a file naming its git directory) the directory holding the common git directory.
// git is not run: the files say it.
//
// A .git file is anyone's to write — a sandboxed command can put `gitdir:
// /other/project/.git/worktrees/w1` in sub/.git — and the memory it leads to joins the system
// prompt of a session started there: so a .git file counts only as one end of a link whose
// other end is where no such command can write, the common git directory's own records. Its
// git directory must be an entry of that directory's worktrees/ (as `git worktree add` makes
// it, commondir and all), and that entry's gitdir file must name this .git file back.
// Otherwise the directory is its own root.
func canonicalRoot(cwd string) string {
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	root := findRoot(cwd)
	dotgit := filepath.Join(root, ".git")
	st, err := os.Lstat(dotgit)
	if err != nil || st.IsDir() {
		return root
	}
	b, err := atomicfile.ReadResolved(dotgit, maxGitFile)
	if err != nil {
		return root
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return root
	}
	gitdir = relativeTo(root, gitdir)
	c, err := atomicfile.ReadResolved(filepath.Join(gitdir, "commondir"), maxGitFile)
	if err != nil {
		return root // no linked worktree's git directory (a submodule's, a separate one)
	}
	common := relativeTo(gitdir, strings.TrimSpace(string(c)))
	if filepath.Base(common) != ".git" {
		return root // a bare or separate git directory: no main work tree to name
	}
	if !samePath(filepath.Dir(gitdir), filepath.Join(common, "worktrees")) {
		return root // not one of the common directory's worktrees
	}
	back, err := atomicfile.ReadResolved(filepath.Join(gitdir, "gitdir"), maxGitFile)
	if err != nil || !samePath(relativeTo(gitdir, strings.TrimSpace(string(back))), dotgit) {
		return root // the repository does not name this .git file as its worktree's
	}
	return filepath.Dir(common)
}

// relativeTo is p read from a file in dir: as it is when absolute, else joined to dir; clean.
func relativeTo(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// samePath reports whether a and b name the same file, links resolved where they can be.
func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// Auto is an open auto memory directory.
type Auto struct {
	// Dir is the directory (absolute).
	Dir string
}

// OpenAuto creates dir when it is missing and checks that files can be created there: a
// directory keel cannot write is an error that says so, because a model told it has a
// memory would fail at every attempt to keep one.
func OpenAuto(dir string) (*Auto, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("auto memory directory %s: %w", dir, err)
	}
	fix := `fix its permissions, or switch auto memory off with "autoMemoryEnabled": false in settings`
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("auto memory directory %s cannot be created (%v): %s", abs, err, fix)
	}
	probe, err := os.CreateTemp(abs, ".keel-write-check-*")
	if err != nil {
		return nil, fmt.Errorf("auto memory directory %s is not writable (%v): %s", abs, err, fix)
	}
	name := probe.Name()
	_ = probe.Close()
	if err := os.Remove(name); err != nil {
		return nil, fmt.Errorf("auto memory directory %s: remove %s: %w", abs, name, err)
	}
	return &Auto{Dir: abs}, nil
}

// Index is the head of MEMORY.md as the prompt carries it.
type Index struct {
	// Text is the first [AutoIndexLines] lines, at most [AutoIndexBytes]; empty when there is
	// no index yet.
	Text string
	// Truncated says the file goes on past Text.
	Truncated bool
}

// ReadIndex reads the head of the index now. A missing index is empty, not an error.
func (a *Auto) ReadIndex() (Index, error) {
	// Regular files only, never waiting on a FIFO: keel reads it at every session's start.
	f, err := atomicfile.OpenResolved(filepath.Join(a.Dir, AutoIndexName))
	if errors.Is(err, fs.ErrNotExist) {
		return Index{}, nil
	}
	if err != nil {
		return Index{}, fmt.Errorf("read auto memory index: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, AutoIndexBytes+1))
	var b strings.Builder
	var idx Index
	for lines := 0; ; lines++ {
		line, err := r.ReadString('\n')
		if lines == AutoIndexLines || b.Len()+len(line) > AutoIndexBytes {
			idx.Truncated = line != "" || err == nil
			break
		}
		b.WriteString(line)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Index{}, fmt.Errorf("read auto memory index: %w", err)
		}
	}
	idx.Text = strings.TrimRight(b.String(), "\n")
	return idx, nil
}
