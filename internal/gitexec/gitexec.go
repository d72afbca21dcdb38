// Package gitexec is the one way keel runs git itself: the environment snapshot's status, agent
// worktrees, and anything later. A repository's configuration can name programs git runs on
// its own — core.fsmonitor on every status, hooks on checkout, clean and smudge filters, an
// external diff, a pager, a credential helper, an ext:: transport — so a cloned project could
// run code the moment keel looks at it. Until the workspace is trusted, [Runner] neutralises
// all of it from the command line (which outranks every configuration file), and refuses to
// discover a bare repository the project planted in a subdirectory. A trusted workspace's git
// runs as the user's own would: its hooks and filters apply.
//
// internal/gittest is the tests' git and is exempt; a test in this package lists every exec
// of git in the tree and fails on any that does not come through here.
package gitexec

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/keel-dev/keel/internal/hostexec"
)

// Runner runs git for keel. The zero value is for an untrusted workspace, so a caller that
// never heard of trust is safe.
type Runner struct {
	// Trusted says the user trusts the workspace: its repository's configuration, hooks and
	// filters apply as they would to the user's own git.
	Trusted bool
	// Env, when not nil, is the environment git runs with (os/exec's default otherwise).
	Env []string
}

// Command returns git with args to run in dir. Untrusted, it first reads the configuration
// git would use (which runs nothing) to name every per-driver command to switch off.
func (r Runner) Command(ctx context.Context, dir string, args ...string) (*exec.Cmd, error) {
	var pre []string
	if !r.Trusted {
		keys, err := r.configKeys(ctx, dir)
		if err != nil {
			return nil, err
		}
		if pre, err = Neutralise(keys); err != nil {
			return nil, err
		}
	}
	cmd := hostexec.Command(ctx, "git", append(pre, args...)...)
	cmd.Dir = dir
	cmd.Env, _ = hostexec.Environ(r.Env) // git finds git-lfs, credential helpers and ssh on it
	return cmd, nil
}

// Output runs git with args in dir and returns its standard output; a failure's error holds
// the command and what git wrote on standard error.
func (r Runner) Output(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd, err := r.Command(ctx, dir, args...)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// configKeys lists the configuration keys git would read in dir, from every file and every
// include, under the fixed neutral options (reading configuration runs nothing, and a bare
// repository is not discovered). Outside a repository that is the user's and system's.
func (r Runner) configKeys(ctx context.Context, dir string) ([]string, error) {
	cmd := hostexec.Command(ctx, "git", append(fixed(), "config", "--list", "-z", "--includes")...)
	cmd.Dir = dir
	cmd.Env, _ = hostexec.Environ(r.Env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			return nil, fmt.Errorf("git config --list: %w", err)
		}
		// No configuration at all, or none readable: nothing to switch off beyond the fixed set.
		return nil, nil
	}
	var keys []string
	for entry := range bytes.SplitSeq(out, []byte{0}) {
		key, _, _ := bytes.Cut(entry, []byte{'\n'})
		if len(key) > 0 {
			keys = append(keys, string(key))
		}
	}
	return keys, nil
}
