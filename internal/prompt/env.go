package prompt

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
)

// Environment is what the model is told about where it runs. It is captured once per session
// ([DetectEnvironment]) and never refreshed per request: a clock or a git status that changed
// between requests would change the prompt and miss the cache.
type Environment struct {
	Cwd      string
	Platform string // e.g. "linux/amd64"
	Date     string // YYYY-MM-DD, the session's start date
	GitRepo  bool
	Branch   string
	// Status is `git status --short` at session start, cut to a few dozen lines.
	Status string
}

// Limits of the git status snapshot.
const (
	maxStatusLines = 40
	maxStatusBytes = 2000
)

// DetectEnvironment captures the environment of a session started in cwd at now, running git
// through git (untrusted unless the workspace is: then the repository's own programs —
// fsmonitor, filters, hooks — stay off). Git problems (no git binary, not a work tree, a
// repository keel cannot run git in safely) give GitRepo false, not an error.
func DetectEnvironment(ctx context.Context, cwd string, now time.Time, git gitexec.Runner) Environment {
	env := Environment{
		Cwd:      cwd,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Date:     now.Format(time.DateOnly),
	}
	// One status with the branch line: it fails outside a work tree, as rev-parse would.
	out, err := git.Output(ctx, cwd, "--no-optional-locks", "status", "--short", "--branch")
	if err != nil {
		return env
	}
	head, status, _ := strings.Cut(strings.TrimRight(string(out), "\n"), "\n")
	env.GitRepo = true
	env.Branch = branchOf(head)
	env.Status = snapshot(status)
	return env
}

// branchOf reads the branch from status --branch's first line: "## main...origin/main
// [ahead 1]", "## No commits yet on main", or "## HEAD (no branch)" when detached.
func branchOf(line string) string {
	line = strings.TrimPrefix(line, "## ")
	for _, p := range []string{"No commits yet on ", "Initial commit on "} {
		line = strings.TrimPrefix(line, p)
	}
	if strings.HasPrefix(line, "HEAD (no branch)") {
		return ""
	}
	branch, _, _ := strings.Cut(line, "...")
	return branch
}

// snapshot cuts a status listing to maxStatusLines lines and maxStatusBytes bytes and says how
// much was left out.
func snapshot(status string) string {
	if status == "" {
		return ""
	}
	lines := strings.Split(status, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == maxStatusLines || b.Len()+len(l) > maxStatusBytes {
			b.WriteString("… and " + strconv.Itoa(len(lines)-i) + " more")
			return b.String()
		}
		b.WriteString(l + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
