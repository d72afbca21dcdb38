package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/gitexec"
)

// git runs git for marketplaces and plugin sources. Nothing in a cloned repository runs: git
// runs no hooks of a clone, and the clone's own config is never consulted for the commands
// used here; prompts for credentials are off (a private repository needs a credential
// helper or an SSH key).
type git struct {
	env []string
}

func (g git) run(ctx context.Context, dir string, args ...string) (string, error) {
	env := g.env
	if env == nil {
		env = os.Environ()
	}
	// A marketplace is nobody's trusted workspace: its repository's configuration runs nothing.
	r := gitexec.Runner{Env: append(env[:len(env):len(env)], "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=")}
	out, err := r.Output(ctx, dir, append([]string{"-c", "advice.detachedHead=false"}, args...)...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// clone clones url into dest (which must not exist) and checks out ref: a branch, a tag or a
// full commit id; "" is the default branch. It returns the commit checked out.
func (g git) clone(ctx context.Context, url, dest, ref string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(dest), err)
	}
	args := []string{"clone", "--quiet", "--no-recurse-submodules"}
	if ref != "" && !fullSHA.Get().MatchString(ref) {
		args = append(args, "--branch", ref)
	}
	if _, err := g.run(ctx, "", append(args, "--", url, dest)...); err != nil {
		os.RemoveAll(dest)
		return "", err
	}
	if fullSHA.Get().MatchString(ref) {
		if _, err := g.run(ctx, dest, "checkout", "--quiet", "--detach", ref); err != nil {
			os.RemoveAll(dest)
			return "", fmt.Errorf("commit %s of %s: %w", ref, url, err)
		}
	}
	return g.run(ctx, dest, "rev-parse", "HEAD")
}

// githubURL is the clone URL of a GitHub owner/repo.
func githubURL(repo string) string { return "https://github.com/" + repo + ".git" }
