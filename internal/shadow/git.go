package shadow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/keel-dev/keel/internal/gitexec"
)

// neutralConfig is what every git call of this package passes with -c: no hooks, no file
// system monitor, no conversions, no signing, no automatic housekeeping — whatever the
// user's or the system's configuration says, since a shadow repository must store and give
// back the bytes it was handed.
//
// The calls go through internal/gitexec as trusted ones: the repository is keel's own (under
// KEEL_HOME, with the system and global files switched off), so no configuration of the
// project's is read, and this list switches off the rest.
var neutralConfig = []string{
	"core.bare=false",
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.autocrlf=false",
	"core.safecrlf=false",
	"core.symlinks=true",
	"core.fileMode=true",
	"core.ignoreCase=false",
	"core.quotePath=false",
	"core.excludesFile=/dev/null",
	"core.attributesFile=/dev/null",
	"core.sparseCheckout=false",
	"core.splitIndex=false",
	"core.untrackedCache=false",
	"gc.auto=0",
	"maintenance.auto=false",
	"commit.gpgSign=false",
	"advice.detachedHead=false",
}

// gitEnv is the environment of every git call (empty paths are left unset): the process's, without the GIT_* variables a
// hook or an outer git might have set (GIT_DIR, GIT_INDEX_FILE…), with the system and global
// configuration files switched off and a fixed identity for the shadow commits.
func gitEnv(gitDir, workTree, index string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	for _, kv := range [][2]string{{"GIT_DIR", gitDir}, {"GIT_WORK_TREE", workTree}, {"GIT_INDEX_FILE", index}} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_AUTHOR_NAME=keel", "GIT_AUTHOR_EMAIL=keel@localhost",
		"GIT_COMMITTER_NAME=keel", "GIT_COMMITTER_EMAIL=keel@localhost",
	)
}

// runGit is the one place this package runs git: in workTree, on the shadow repository
// gitDir with index, configuration neutralised. It returns stdout; a failure carries git's
// stderr.
func runGit(ctx context.Context, gitDir, workTree, index string, stdin io.Reader, args ...string) ([]byte, error) {
	full := make([]string, 0, 2*len(neutralConfig)+len(args))
	for _, c := range neutralConfig {
		full = append(full, "-c", c)
	}
	full = append(full, args...)
	env := gitEnv(gitDir, workTree, index)
	if gitDir == "" {
		env = gitEnv("", "", "") // git init takes the directory as its argument
	}
	cmd, err := gitexec.Runner{Trusted: true, Env: env}.Command(ctx, workTree, full...)
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("git %s: git is not installed or not on PATH; the shadow repository needs it", args[0])
		}
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
