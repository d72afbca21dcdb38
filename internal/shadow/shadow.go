// Package shadow keeps a shadow git repository per working directory under keel's home, so
// that a rewind restores what every turn changed — by Edit and Write, and by Bash, builds and
// git alike — and a turn's changes can be shown as a diff. The user's own repository is never
// read or written through git: the shadow has its own object store and index, with the
// directory as its work tree (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE).
//
// A capture is incremental: `git ls-files --others --modified --deleted` compares the
// directory with the index by stat data, and only the paths it names are hashed again. What
// the project's ignore rules leave out (.gitignore files, .git/info/exclude) and regular files
// over [Options.MaxFileBytes] are not captured; a restore leaves ignored files alone, deletes
// large files that did not exist at the checkpoint, and names the large files it could not
// give back. Every git call neutralises the repository and user configuration (no hooks, no
// filters, no line-ending conversion), so a restore gives back the bytes captured and the
// executable bit; a file that exists keeps its other permission bits.
//
// Layout: $KEEL_HOME/shadow/<sanitised directory>.git — a git directory with one index per
// session (index-<session>, so sessions in one directory never wait for each other's index
// lock) and one ref per session (refs/keel/<session>) whose history is its checkpoints.
package shadow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/lazy"

	"github.com/keel-dev/keel/internal/transcript"
)

// Defaults for [Options].
const (
	// DefaultMaxFileBytes: a file this large is a build artefact, a data set or a disk image
	// far more often than something an agent edits; hashing it every turn would cost more
	// than the undo is worth.
	DefaultMaxFileBytes = 8 << 20
	// DefaultMaxFiles: a directory with more files than this (a home directory, a monorepo's
	// root with its dependencies) is not captured at all, rather than slowly.
	DefaultMaxFiles = 200_000
)

// Options configure a shadow repository.
type Options struct {
	// Home is keel's directory ($KEEL_HOME); required.
	Home string
	// Session names this session's index and checkpoint ref; letters, digits, - and _.
	Session string
	// MaxFileBytes leaves out regular files larger than this; zero is DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxFiles refuses a capture that would hold more files; zero is DefaultMaxFiles.
	MaxFiles int
	// Exclude gives, at each capture, gitignore lines anchored at the work tree for what the
	// sandbox masks there (its masked paths, the Read deny rules): never captured, and dropped
	// from the index when an earlier capture, or the index another session left, holds it.
	// The repository lies under keel's home, where a sandboxed command could otherwise read
	// a masked file's copy.
	Exclude func(workTree string) []string
	Logger  *slog.Logger
}

// Repo is the shadow repository of one working directory, for one session. Its methods are
// safe for concurrent use; they run one at a time.
type Repo struct {
	workTree string
	gitDir   string
	index    string
	ref      string
	opts     Options
	logger   *slog.Logger

	// mu serialises the git calls on index and ref, and guards last, the checkpoint the ref
	// points at (once read), and indexTree, the tree the index held when it was last written
	// or read ("" when not known).
	mu        sync.Mutex
	last      *Checkpoint
	indexTree string
}

// Checkpoint is the state of the working directory at one moment.
type Checkpoint struct {
	// Commit is the shadow commit; it names the checkpoint.
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
	Label  string `json:"label,omitempty"`
	// Large are the files (relative, slash-separated) left out for their size.
	Large []string `json:"large,omitempty"`
}

var sessionRE = lazy.Regexp{Expr: `^[A-Za-z0-9_-]{1,128}$`}

// Open opens, creating it when needed, the shadow repository of workDir.
func Open(ctx context.Context, workDir string, opts Options) (*Repo, error) {
	if opts.Home == "" {
		panic("shadow.Open: Options.Home is required")
	}
	if !sessionRE.Get().MatchString(opts.Session) {
		return nil, fmt.Errorf("shadow repository: session %q: want 1-128 letters, digits, - and _", opts.Session)
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(workDir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("shadow repository of %s: %w", workDir, err)
	}
	gitDir := filepath.Join(opts.Home, "shadow", transcript.SanitizeCWD(abs)+".git")
	r := &Repo{workTree: abs, gitDir: gitDir, index: filepath.Join(gitDir, "index-"+opts.Session),
		ref: "refs/keel/" + opts.Session, opts: opts, logger: opts.Logger.With("shadow", gitDir)}
	if err := r.init(ctx); err != nil {
		return nil, fmt.Errorf("shadow repository of %s: %w", abs, err)
	}
	return r, nil
}

// attributes override every .gitattributes of the project: the shadow stores bytes as they
// are, whatever text, eol, filter or encoding the project asks git to apply.
const attributes = "* -text -ident -filter -working-tree-encoding\n"

// init creates the git directory on first use and seeds this session's index from the
// newest index another session left, so its first capture hashes only what changed since.
func (r *Repo) init(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(r.gitDir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(r.gitDir), 0o700); err != nil {
			return err
		}
		if _, err := runGit(ctx, "", r.workTree, "", nil, "init", "-q", "--bare", r.gitDir); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	info := filepath.Join(r.gitDir, "info")
	if err := os.MkdirAll(info, 0o700); err != nil {
		return err
	}
	// Replaced only when it differs, never rewritten in place: another session's git may be
	// hashing files this moment, and an empty attributes file would let the project's
	// .gitattributes change the bytes it stores.
	path := filepath.Join(info, "attributes")
	if old, err := os.ReadFile(path); err != nil || string(old) != attributes {
		if err := atomicfile.WriteFile(path, []byte(attributes), 0o600); err != nil {
			return err
		}
	}
	if _, err := os.Stat(r.index); errors.Is(err, fs.ErrNotExist) {
		r.seedIndex()
	}
	return nil
}

// seedIndex copies the newest index of another session; without one the first capture
// hashes every file.
func (r *Repo) seedIndex() {
	names, _ := filepath.Glob(filepath.Join(r.gitDir, "index-*"))
	var newest string
	var at time.Time
	for _, n := range names {
		if st, err := os.Stat(n); err == nil && st.Mode().IsRegular() && !strings.HasSuffix(n, ".lock") && st.ModTime().After(at) {
			newest, at = n, st.ModTime()
		}
	}
	if newest == "" {
		return
	}
	if b, err := os.ReadFile(newest); err == nil {
		if err := os.WriteFile(r.index, b, 0o600); err != nil {
			r.logger.Debug("seed index", "err", err)
		}
	}
}

// WorkTree is the directory the repository shadows.
func (r *Repo) WorkTree() string { return r.workTree }

func (r *Repo) git(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	return runGit(ctx, r.gitDir, r.workTree, r.index, stdin, args...)
}

// refreshExcludes gives the shadow the project's own exclude file (which lives in the
// project's git directory, not in the work tree) and keeps the shadow's directory out when
// keel's home lies inside the work tree.
// The masked lines come last, where no negation of the project's can take them back.
func (r *Repo) refreshExcludes(masked []string) error {
	var b bytes.Buffer
	if own, err := os.ReadFile(filepath.Join(r.workTree, ".git", "info", "exclude")); err == nil {
		b.Write(own)
		b.WriteByte('\n')
	}
	if rel, err := filepath.Rel(r.workTree, r.opts.Home); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		fmt.Fprintf(&b, "/%s/\n", filepath.ToSlash(rel))
	}
	for _, m := range masked {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	if err := replaceIfChanged(filepath.Join(r.gitDir, "info", "exclude"), b.Bytes()); err != nil {
		return err
	}
	if len(masked) == 0 {
		return nil
	}
	return replaceIfChanged(filepath.Join(r.gitDir, "info", "keel-masked"), []byte(strings.Join(masked, "\n")+"\n"))
}

// replaceIfChanged writes data to path unless it holds it already; replaced, not rewritten
// in place, for the reason init gives.
func replaceIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return atomicfile.WriteFile(path, data, 0o600)
}

// dropMasked removes from the index what the masked lines cover: a file captured before a
// rule masked it, or held by the index this one was seeded from. A project's .gitignore
// does not take out what the shadow holds already; a mask does.
func (r *Repo) dropMasked(ctx context.Context, masked []string) error {
	if len(masked) == 0 {
		return nil
	}
	out, err := r.git(ctx, nil, "ls-files", "-z", "--cached", "--ignored", "--exclude-from="+filepath.Join(r.gitDir, "info", "keel-masked"))
	if err != nil || len(out) == 0 {
		return err
	}
	r.indexTree = ""
	_, err = r.git(ctx, bytes.NewReader(out), "update-index", "-z", "--force-remove", "--stdin")
	return err
}

// Capture records the working directory as it is now and returns the checkpoint. A
// directory that did not change since the last capture gives the same checkpoint again.
func (r *Repo) Capture(ctx context.Context, label string) (Checkpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp, err := r.capture(ctx, label)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("capture %s: %w", r.workTree, err)
	}
	return cp, nil
}

func (r *Repo) capture(ctx context.Context, label string) (Checkpoint, error) {
	var masked []string
	if r.opts.Exclude != nil {
		masked = r.opts.Exclude(r.workTree)
	}
	if err := r.refreshExcludes(masked); err != nil {
		return Checkpoint{}, err
	}
	if err := r.dropMasked(ctx, masked); err != nil {
		return Checkpoint{}, err
	}
	parent, err := r.head(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	out, err := r.git(ctx, nil, "ls-files", "-z", "--others", "--modified", "--deleted", "--exclude-standard")
	if err != nil {
		return Checkpoint{}, err
	}
	ch, err := r.classify(out)
	if err != nil {
		return Checkpoint{}, err
	}
	if parent.Commit != "" && r.indexTree == parent.Tree && len(ch.update) == 0 && len(ch.drop) == len(ch.large) &&
		slices.Equal(parent.Large, ch.large) {
		// Nothing changed since the last checkpoint (large files still left out): the index
		// and so the tree are as they were.
		return parent, nil
	}
	if err := r.stage(ctx, ch); err != nil {
		return Checkpoint{}, err
	}
	tree, err := r.git(ctx, nil, "write-tree")
	if err != nil {
		return Checkpoint{}, err
	}
	cp := Checkpoint{Tree: string(bytes.TrimSpace(tree)), Label: label, Large: ch.large}
	r.indexTree = cp.Tree
	if parent.Commit != "" && parent.Tree == cp.Tree && slices.Equal(parent.Large, cp.Large) {
		return parent, nil
	}
	args := []string{"commit-tree", cp.Tree, "-F", "-"}
	if parent.Commit != "" {
		args = append(args, "-p", parent.Commit)
	}
	commit, err := r.git(ctx, strings.NewReader(message(cp)), args...)
	if err != nil {
		return Checkpoint{}, err
	}
	cp.Commit = string(bytes.TrimSpace(commit))
	if _, err := r.git(ctx, nil, "update-ref", r.ref, cp.Commit); err != nil {
		return Checkpoint{}, err
	}
	r.last = &cp
	return cp, nil
}

// bulkFiles is how many files to hash at once before they are written as one pack instead
// of one object file each: creating ten thousand files costs seconds on a loaded disk.
const bulkFiles = 256

// stage brings the index up to date with the changes.
func (r *Repo) stage(ctx context.Context, ch changes) error {
	if len(ch.drop) > 0 {
		if _, err := r.git(ctx, nulList(ch.drop), "update-index", "-z", "--force-remove", "--stdin"); err != nil {
			return err
		}
	}
	if len(ch.update) == 0 {
		return nil
	}
	args := []string{"update-index", "-z", "--add", "--remove", "--stdin"}
	if len(ch.update) >= bulkFiles {
		// Past core.bigFileThreshold git streams blobs into one pack. Only this call sets it:
		// in a diff the threshold would make every file binary.
		args = append([]string{"-c", "core.bigFileThreshold=1"}, args...)
	}
	_, err := r.git(ctx, nulList(ch.update), args...)
	return err
}

// changes sorts the paths git listed: what to hash (or drop from the index when gone), what
// to drop from the index although it exists (now a directory, or grown too large), and the
// large files left out.
type changes struct {
	update, drop, large []string
}

func (r *Repo) classify(listing []byte) (changes, error) {
	var ch changes
	seen := map[string]bool{}
	for p := range strings.SplitSeq(strings.TrimSuffix(string(listing), "\x00"), "\x00") {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if strings.HasSuffix(p, "/") {
			// A repository of its own inside the directory: git would record only its HEAD.
			r.logger.Debug("nested repository left out", "path", p)
			continue
		}
		st, err := os.Lstat(filepath.Join(r.workTree, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			ch.update = append(ch.update, p) // --remove drops it
		case err != nil:
			return changes{}, err
		case st.IsDir():
			ch.drop = append(ch.drop, p)
		case st.Mode().IsRegular() && st.Size() > r.opts.MaxFileBytes:
			ch.drop = append(ch.drop, p)
			ch.large = append(ch.large, p)
		case st.Mode().IsRegular() || st.Mode()&fs.ModeSymlink != 0:
			ch.update = append(ch.update, p)
		}
	}
	if len(ch.update) > r.opts.MaxFiles {
		return changes{}, fmt.Errorf("%d files changed, more than the %d a shadow repository takes; a rewind will not cover this directory's shell changes",
			len(ch.update), r.opts.MaxFiles)
	}
	slices.Sort(ch.large)
	return ch, nil
}

func nulList(paths []string) io.Reader {
	return strings.NewReader(strings.Join(paths, "\x00") + "\x00")
}

// largeTrailer carries a checkpoint's large files in its commit message.
const largeTrailer = "Keel-Large: "

func message(cp Checkpoint) string {
	msg := "keel checkpoint"
	if cp.Label != "" {
		msg += ": " + strings.ReplaceAll(cp.Label, "\n", " ")
	}
	msg += "\n"
	if len(cp.Large) > 0 {
		b, _ := json.Marshal(cp.Large)
		msg += "\n" + largeTrailer + string(b) + "\n"
	}
	return msg
}

// head returns this session's newest checkpoint, or none; it reads the ref once, then keeps
// what captures made.
func (r *Repo) head(ctx context.Context) (Checkpoint, error) {
	if r.last != nil {
		return *r.last, nil
	}
	out, err := r.git(ctx, nil, "for-each-ref", "--format=%(objectname)", r.ref)
	if err != nil {
		return Checkpoint{}, err
	}
	commit := string(bytes.TrimSpace(out))
	if commit == "" {
		return Checkpoint{}, nil
	}
	cp, err := r.read(ctx, commit)
	if err != nil {
		return Checkpoint{}, err
	}
	r.last = &cp
	return cp, nil
}

// Checkpoint reads the checkpoint commit names (a caller keeps only the commit id, in its
// transcript).
func (r *Repo) Checkpoint(ctx context.Context, commit string) (Checkpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read(ctx, commit)
}

var hashRE = lazy.Regexp{Expr: `^[0-9a-f]{40,64}$`}

func (r *Repo) read(ctx context.Context, commit string) (Checkpoint, error) {
	if !hashRE.Get().MatchString(commit) {
		return Checkpoint{}, fmt.Errorf("checkpoint %q: not a commit id", commit)
	}
	out, err := r.git(ctx, nil, "cat-file", "commit", commit)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint %s: %w", commit, err)
	}
	cp := Checkpoint{Commit: commit}
	header, body, _ := strings.Cut(string(out), "\n\n")
	for line := range strings.SplitSeq(header, "\n") {
		if t, ok := strings.CutPrefix(line, "tree "); ok {
			cp.Tree = t
		}
	}
	for line := range strings.SplitSeq(body, "\n") {
		if l, ok := strings.CutPrefix(line, "keel checkpoint: "); ok {
			cp.Label = l
		}
		if l, ok := strings.CutPrefix(line, largeTrailer); ok {
			if err := json.Unmarshal([]byte(l), &cp.Large); err != nil {
				return Checkpoint{}, fmt.Errorf("checkpoint %s: large files: %w", commit, err)
			}
		}
	}
	return cp, nil
}
