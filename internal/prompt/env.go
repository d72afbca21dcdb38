package prompt

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
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

// DetectEnvironment captures the environment of a session started in cwd at now. Git problems
// (no git binary, not a repository) give GitRepo false, not an error.
func DetectEnvironment(ctx context.Context, cwd string, now time.Time) Environment {
	env := Environment{
		Cwd:      cwd,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Date:     now.Format(time.DateOnly),
	}
	if out, err := git(ctx, cwd, "rev-parse", "--is-inside-work-tree"); err != nil || out != "true" {
		return env
	}
	env.GitRepo = true
	env.Branch, _ = git(ctx, cwd, "branch", "--show-current")
	if status, err := git(ctx, cwd, "status", "--short"); err == nil {
		env.Status = snapshot(status)
	}
	return env
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks"}, args...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return strings.TrimRight(out.String(), "\n"), nil
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
