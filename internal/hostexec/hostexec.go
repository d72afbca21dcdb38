// Package hostexec is the one place keel finds the programs it runs itself, outside the
// sandbox — git, bubblewrap, sh for hooks and the status line, rg for Grep, bash for a command
// run unsandboxed, tmux — by name on PATH. A PATH entry inside a directory sandboxed commands
// may write (an activated `.venv/bin`, `node_modules/.bin`, direnv's `PATH_add bin`, `~/go/bin`
// with home a writable root) would let any command plant a `git` that keel then runs outside,
// with the user's full rights, at that same command's release. So each sandbox says what its
// commands can write ([Guard]), and [Path] skips every PATH entry, and every program, that lies
// there.
//
// Programs the user names (a hook's command line, an MCP server, an LSP server) keep their PATH
// meaning: only the `sh` that runs them is resolved here; [Exposed] lists the PATH entries a
// command can write, for the session's notice and `keel doctor`.
package hostexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/lazy"
)

// ErrOnlyWritable: the program is on PATH only where a sandboxed command could have put it.
var ErrOnlyWritable = errors.New("found on PATH only in directories sandboxed commands can write")

var (
	mu sync.Mutex
	// guards are the sandboxes' tests of a path a command may write, one per [Guard] call: a
	// process may hold several sessions, and a program must be safe from all of them.
	guards []func(path string) bool
	// found holds what Path resolved, per name and PATH, until the next Guard; made on first
	// use, so that the package has no init work.
	found map[[2]string]string
	// pycache is the bytecode cache of the Python programs keel runs outside the sandbox
	// ([PythonCache]); "" until a sandbox sets one.
	pycache string
)

// Guard adds writable — true for a path a sandboxed command may write — to what [Path] avoids,
// for the rest of the process: call it when a sandbox is set up, before its first command. What
// was resolved before is looked up again.
func Guard(writable func(path string) bool) {
	mu.Lock()
	defer mu.Unlock()
	guards = append(guards, writable)
	clear(found)
}

// startDir is keel's working directory as the first lookup found it: the project, whose PATH
// entries (.venv/bin, node_modules/.bin, bin) are skipped even before any sandbox says what
// its commands may write — a command of an earlier session may have planted a program there,
// and keel looks git up at start-up, before its sandbox is built.
var startDir = lazy.Value[string]{New: func() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		return real
	}
	return wd
}}

// within reports whether p is root or below it.
func within(p, root string) bool {
	return root != "" && root != "/" && (p == root || strings.HasPrefix(p, root+string(filepath.Separator)))
}

// writable reports whether a guard says a command may write p, as given or with its links
// resolved, or p lies in the directory keel started in.
func writable(p string) bool {
	real, err := filepath.EvalSymlinks(p)
	if within(p, startDir.Get()) || (err == nil && within(real, startDir.Get())) {
		return true
	}
	for _, g := range guards {
		if g(p) || (err == nil && g(real)) {
			return true
		}
	}
	return false
}

// Path returns the absolute path of program name as exec.LookPath would find it on PATH,
// skipping relative PATH entries and every entry — and every program, its links resolved —
// that a sandboxed command may write. A name with a slash is returned as it is. The answer
// is kept until the next [Guard].
func Path(name string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) {
		return name, nil
	}
	pathList := os.Getenv("PATH")
	mu.Lock()
	defer mu.Unlock()
	key := [2]string{name, pathList}
	if p, ok := found[key]; ok {
		return p, nil
	}
	skipped := false
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // the working directory: never for a program keel runs itself
		}
		p := filepath.Join(dir, name)
		if !isProgram(p) {
			continue
		}
		if writable(dir) || writable(p) {
			skipped = true
			continue
		}
		if found == nil {
			found = map[[2]string]string{}
		}
		found[key] = p
		return p, nil
	}
	if skipped {
		return "", &exec.Error{Name: name, Err: ErrOnlyWritable}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// isProgram says p is a regular file someone may execute.
func isProgram(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Command is exec.CommandContext for a program keel runs itself, found by [Path]; when it is
// not found, the command's Err says so and Start fails, as exec.Command does. Its Env is
// keel's own through [PythonEnv] (nil before a sandbox set a cache): a caller that sets Env
// passes it through PythonEnv itself when the program runs outside the sandbox.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	p, err := Path(name)
	if err != nil {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Path, cmd.Err = name, err
		return cmd
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Args[0] = name // as exec.Command would give it: what the program sees as its name
	cmd.Env = PythonEnv(nil)
	return cmd
}

// Exposed returns the entries of pathList (PATH's form) that a command may write, as
// writable says, in order: the programs found there are the command's to choose, for every
// program the user names by bare name outside the sandbox (hooks, MCP servers, the status
// line).
func Exposed(pathList string, writable func(path string) bool) []string {
	var out []string
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		real, err := filepath.EvalSymlinks(dir)
		if writable(filepath.Clean(dir)) || (err == nil && writable(real)) {
			out = append(out, dir)
		}
	}
	return out
}

// Describe is Exposed as a sentence for a notice; empty when none.
func Describe(dirs []string) string {
	if len(dirs) == 0 {
		return ""
	}
	return fmt.Sprintf("PATH names %s, which sandboxed commands can write: a program found there by a hook, the status line or an MCP server (run outside the sandbox by bare name) may be one a command put there; keel's own programs skip it", strings.Join(dirs, ", "))
}

// Trusted returns pathList (PATH's form) without its relative entries and those a sandboxed
// command may write, and the entries it left out: the PATH of a command a sandboxed session
// runs outside the sandbox (an excluded command, an approved dangerouslyDisableSandbox call),
// so that the docker or make it names is not one a sandboxed command put in a .venv/bin first
// on PATH.
func Trusted(pathList string) (kept string, dropped []string) {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) || writable(filepath.Clean(dir)) {
			dropped = append(dropped, dir)
			continue
		}
		out = append(out, dir)
	}
	return strings.Join(out, string(filepath.ListSeparator)), dropped
}

// Environ is env (nil: keel's own) with the PATH [Trusted] keeps and [PythonEnv]'s cache, and
// the entries it left out: the environment of a program keel runs outside the sandbox. Finding the program itself
// safely ([Path]) is not enough — git runs git-lfs, credential helpers and ssh, a shell runs
// what its command line names, all by their own PATH lookup.
func Environ(env []string) ([]string, []string) {
	if env == nil {
		env = os.Environ()
	}
	out := PythonEnv(slices.Clone(env))
	var dropped []string
	for i, kv := range out {
		// Every PATH= an environment holds: os/exec passes the last one, a shell may take
		// the first.
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			kept, d := Trusted(v)
			out[i] = "PATH=" + kept
			dropped = append(dropped, d...)
		}
	}
	return out, dropped
}
