// Package worktree gives an agent its own git worktree: .keel/worktrees/<slug> on branch
// keel/<slug>. An existing worktree is reused (its HEAD read from the .git pointer file, no git
// process), configured heavy directories such as node_modules are symlinked from the main work
// tree, and WorktreeCreate / WorktreeRemove hooks can replace the whole strategy (for
// repositories that are not git, or that need a custom checkout).
//
// A worktree isolates files only: ports, databases and caches outside the tree stay shared.
//
// Git runs through [gitexec.Runner]: until the workspace is trusted, creating a worktree runs
// none of the repository's hooks (post-checkout, reference-transaction) or filters.
package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/gitexec"
)

// DefaultSymlinks are the directories linked into a new worktree when the configuration
// names none: dependency folders and build caches that are large, slow to rebuild and not
// tracked by git.
var DefaultSymlinks = []string{"node_modules", ".venv", "venv", ".tox", ".gradle", ".turbo"}

// Dir is the folder, relative to the repository root, that holds keel's worktrees.
const Dir = ".keel/worktrees"

// BranchPrefix starts the branch of every keel worktree.
const BranchPrefix = "keel/"

// Worktree is one created or reused worktree.
type Worktree struct {
	Slug   string
	Path   string
	Branch string
	// Base is the commit the worktree started from; a HEAD that moved away from it counts as a
	// change.
	Base string
	// Reused is true when the worktree existed before Create.
	Reused bool
	// Hooked is true when a WorktreeCreate hook made it; then only a hook removes it.
	Hooked bool
}

// Hooks replace the git strategy when the user configured WorktreeCreate / WorktreeRemove
// hooks. handled is false when no hook is configured, and the git strategy runs.
type Hooks interface {
	CreateWorktree(ctx context.Context, name string) (path string, handled bool, err error)
	RemoveWorktree(ctx context.Context, path string) (handled bool, err error)
}

// Manager creates and removes worktrees of one repository. Its methods may be called from
// several goroutines for different slugs.
type Manager struct {
	// Root is the main work tree of the repository.
	Root string
	// Symlinks are directories (relative to Root) linked into every worktree; nil means
	// DefaultSymlinks, an empty non-nil slice none.
	Symlinks []string
	// Hooks, if set, may take over creation and removal.
	Hooks Hooks
	// Trusted says the workspace is trusted: git runs the repository's hooks and filters.
	// Untrusted (the zero value), they are switched off (see [gitexec.Runner]).
	Trusted bool
	Logger  *slog.Logger

	// listMu serializes the git commands that read and change the repository's list of
	// worktrees (see [Manager.gitList]).
	listMu sync.Mutex
}

// Slug turns an agent or task name into a worktree slug: "/" becomes "+", because git cannot
// hold both refs/heads/keel/a and refs/heads/keel/a/b, and characters git refuses in a ref
// become "-".
func Slug(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '/':
			b.WriteByte('+')
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == '+':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), ".")
	if s == "" {
		s = "worktree"
	}
	return s
}

// Path returns where the worktree of slug lives.
func (m *Manager) Path(slug string) string { return filepath.Join(m.Root, Dir, slug) }

// Create makes the worktree for name, or reuses the one that exists.
func (m *Manager) Create(ctx context.Context, name string) (*Worktree, error) {
	slug := Slug(name)
	if m.Hooks != nil {
		path, handled, err := m.Hooks.CreateWorktree(ctx, slug)
		if err != nil {
			return nil, fmt.Errorf("worktree %s: WorktreeCreate hook: %w", slug, err)
		}
		if handled {
			return &Worktree{Slug: slug, Path: path, Hooked: true}, nil
		}
	}
	wt := &Worktree{Slug: slug, Path: m.Path(slug), Branch: BranchPrefix + slug}
	if head, err := ReadHead(wt.Path); err == nil {
		wt.Base, wt.Reused = head, true
		m.logger().Debug("worktree reused", "path", wt.Path, "head", head)
	} else {
		if _, err := os.Stat(filepath.Join(m.Root, ".git")); err != nil {
			return nil, fmt.Errorf("worktree %s: %s is not a git repository", slug, m.Root)
		}
		if err := os.MkdirAll(filepath.Dir(wt.Path), 0o755); err != nil {
			return nil, fmt.Errorf("worktree %s: %w", slug, err)
		}
		args := []string{"worktree", "add", "-q", "-B", wt.Branch, wt.Path, "HEAD"}
		if _, err := m.gitList(ctx, args...); err != nil {
			return nil, fmt.Errorf("create worktree %s: %w", slug, err)
		}
		if wt.Base, err = ReadHead(wt.Path); err != nil {
			return nil, fmt.Errorf("create worktree %s: %w", slug, err)
		}
	}
	if err := m.link(wt.Path); err != nil {
		return nil, fmt.Errorf("worktree %s: %w", slug, err)
	}
	return wt, nil
}

// link symlinks the heavy directories of the main tree into the worktree. It is idempotent:
// a link already in place is left alone, and a real directory in the worktree is never
// replaced.
func (m *Manager) link(path string) error {
	dirs := m.Symlinks
	if dirs == nil {
		dirs = DefaultSymlinks
	}
	for _, d := range dirs {
		src := filepath.Join(m.Root, d)
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			continue
		}
		dst := filepath.Join(path, d)
		if target, err := os.Readlink(dst); err == nil && target == src {
			continue
		}
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(src, dst); err != nil {
			return fmt.Errorf("link %s: %w", d, err)
		}
	}
	return nil
}

// Changed reports whether the worktree holds work: uncommitted changes (the symlinked
// directories aside) or commits beyond its base.
func (m *Manager) Changed(ctx context.Context, wt *Worktree) (bool, error) {
	if wt.Hooked {
		return true, nil
	}
	head, err := ReadHead(wt.Path)
	if err != nil {
		return false, err
	}
	if head != wt.Base {
		return true, nil
	}
	args := []string{"status", "--porcelain", "--", "."}
	dirs := m.Symlinks
	if dirs == nil {
		dirs = DefaultSymlinks
	}
	for _, d := range dirs {
		args = append(args, ":(exclude)"+d)
	}
	out, err := m.git(ctx, wt.Path, args...)
	if err != nil {
		return false, fmt.Errorf("status of worktree %s: %w", wt.Slug, err)
	}
	return len(bytes.TrimSpace(out)) > 0, nil
}

// Remove deletes the worktree and its branch.
func (m *Manager) Remove(ctx context.Context, wt *Worktree) error {
	if m.Hooks != nil {
		handled, err := m.Hooks.RemoveWorktree(ctx, wt.Path)
		if err != nil {
			return fmt.Errorf("worktree %s: WorktreeRemove hook: %w", wt.Slug, err)
		}
		if handled || wt.Hooked {
			return nil
		}
	}
	if wt.Hooked {
		return nil
	}
	if _, err := m.gitList(ctx, "worktree", "remove", "--force", wt.Path); err != nil {
		return fmt.Errorf("remove worktree %s: %w", wt.Slug, err)
	}
	if _, err := m.gitList(ctx, "branch", "-q", "-D", wt.Branch); err != nil {
		return fmt.Errorf("remove branch %s: %w", wt.Branch, err)
	}
	return nil
}

// Finish ends an agent's use of a worktree: one without changes is removed, one with changes
// is kept (kept is true) for the user to review or merge.
func (m *Manager) Finish(ctx context.Context, wt *Worktree) (kept bool, err error) {
	changed, err := m.Changed(ctx, wt)
	if err != nil {
		return true, err
	}
	if changed {
		return true, nil
	}
	return false, m.Remove(ctx, wt)
}

// gitList runs git in the main tree for a command that reads every worktree's admin files
// (worktree add and remove, branch -D) while no other such command runs, in this process or
// another keel process on the same repository: git reads a worktree that another add has
// only begun to write as broken ("failed to read .git/worktrees/…/commondir") and fails.
func (m *Manager) gitList(ctx context.Context, args ...string) ([]byte, error) {
	m.listMu.Lock()
	defer m.listMu.Unlock()
	unlock, err := lockFile(filepath.Join(m.Root, ".keel", "worktrees.lock"))
	if err != nil {
		return nil, fmt.Errorf("lock the worktree list: %w", err)
	}
	defer unlock()
	return m.git(ctx, m.Root, args...)
}

func (m *Manager) git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitexec.Runner{Trusted: m.Trusted}.Output(ctx, dir, args...)
}

func (m *Manager) logger() *slog.Logger {
	if m.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Logger
}

// ReadHead returns the commit a worktree's HEAD points at by reading files only: the .git
// pointer file ("gitdir: …"), the worktree's HEAD, and the ref in the common directory (loose
// or packed). Starting a git process per reuse costs more than the whole lookup.
func ReadHead(worktree string) (string, error) {
	pointer, err := os.ReadFile(filepath.Join(worktree, ".git"))
	if err != nil {
		return "", fmt.Errorf("read worktree pointer: %w", err)
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(string(pointer)), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s/.git is not a worktree pointer file", worktree)
	}
	gitdir := strings.TrimSpace(line)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(worktree, gitdir)
	}
	head, err := os.ReadFile(filepath.Join(gitdir, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("read worktree HEAD: %w", err)
	}
	ref, symbolic := strings.CutPrefix(strings.TrimSpace(string(head)), "ref:")
	if !symbolic {
		return strings.TrimSpace(string(head)), nil
	}
	ref = strings.TrimSpace(ref)
	common := gitdir
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
	}
	for _, dir := range []string{gitdir, common} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b)), nil
		}
	}
	packed, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err == nil {
		for l := range strings.Lines(string(packed)) {
			if id, name, ok := strings.Cut(strings.TrimSpace(l), " "); ok && name == ref {
				return id, nil
			}
		}
	}
	return "", fmt.Errorf("resolve %s of worktree %s: %w", ref, worktree, errors.ErrUnsupported)
}
