// Package gittest makes real git repositories in a test's temporary directory, so code that
// drives git (worktrees, branches, status) is tested against git itself rather than a double.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a git repository in t.TempDir with one initial commit on branch main.
type Repo struct {
	t testing.TB
	// Dir is the repository's work tree (absolute, symlinks resolved).
	Dir string
}

// New creates a repository with a README committed on main. It skips the test when git is
// not installed.
func New(t testing.TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Repo{t: t, Dir: dir}
	r.Git("init", "-q", "-b", "main")
	r.Write("README.md", "# test repository\n")
	r.Commit("initial commit")
	return r
}

// Git runs git in the repository with a fixed identity and no user or system config, and
// returns its trimmed output; a failure fails the test.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return Run(r.t, r.Dir, args...)
}

// Run runs git in dir like [Repo.Git].
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := Command(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Command is git with args, in dir and with [Env], for a test that needs the command itself:
// its standard input, its output apart from its errors, or a failure that is not fatal.
func Command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	return cmd
}

// Env is the environment git runs with in tests: the process's, isolated from the user's
// and the system's git configuration, with a fixed author.
func Env() []string {
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=keel test", "GIT_AUTHOR_EMAIL=test@keel.invalid",
		"GIT_COMMITTER_NAME=keel test", "GIT_COMMITTER_EMAIL=test@keel.invalid",
	)
}

// Write writes a file below the work tree, creating directories.
func (r *Repo) Write(rel, content string) {
	r.t.Helper()
	p := filepath.Join(r.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Commit stages everything and commits it.
func (r *Repo) Commit(msg string) {
	r.t.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "-m", msg)
}

// Head returns the commit id HEAD points at.
func (r *Repo) Head() string {
	r.t.Helper()
	return r.Git("rev-parse", "HEAD")
}
