package builtin

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolpath"
)

// realPath resolves the symlinks of abs the way the kernel would, a missing tail kept as
// written (see [toolpath.Real]).
func realPath(abs string) string { return toolpath.Real(abs) }

// workDirs returns the working directories (cwd and --add-dir ones), symlinks resolved.
func workDirs(st tool.State) []string {
	var dirs []string
	for _, d := range append([]string{st.Cwd}, st.AdditionalDirs...) {
		if d != "" {
			dirs = append(dirs, realPath(filepath.Clean(d)))
		}
	}
	return dirs
}

func inAny(dirs []string, p string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return toolpath.Within(p, d) })
}

// target is a path a tool was asked to work on.
type target struct {
	given string // as the model wrote it
	abs   string // absolute, cleaned, "~" expanded: what the user reads in results
	real  string // what the kernel opens; the tool acts on it, and it keys the file-read state
}

// resolve goes through the one resolver the permission check also uses; a call the gate
// checked uses [checked] instead.
func resolve(st tool.State, given string) target {
	p := toolpath.Resolve(given, st.Cwd, "")
	return target{given: given, abs: p.Abs, real: p.Real}
}

// checked returns the target of a file tool's path input: the path the permission gate
// resolved and checked when it did (env.Paths), else given resolved now. Never both: a
// background command that swaps the named file for a link (rename-exchange, in a loop) made a
// second resolution reach the link's target — a Read-denied secret, .claude/settings.json —
// where the first had seen a harmless file (adversary10 N6). The tool then opens this path
// refusing a link anywhere on it, its own name included ([changed]).
func checked(env *tool.Env, given string) target {
	if p, ok := env.Checked(given); ok {
		return target{given: given, abs: p.Abs, real: p.Real}
	}
	return resolve(env.State, given)
}

// changed answers a call whose checked path led through a link when the tool opened it:
// the path was resolved with every link followed, so a link there now was swapped in while
// the call ran, and the file it leads to is one nobody checked. done says what did not
// happen ("read", "written", "changed").
func changed(t target, err error, done string) (tool.Result, bool) {
	var link *atomicfile.LinkError
	if !errors.As(err, &link) && !errors.Is(err, syscall.ELOOP) {
		return tool.Result{}, false
	}
	return linkNow(t, done), true
}

// linkNow answers a call whose checked path is a symbolic link when the tool looks at it: one
// swapped in while the call ran.
func linkNow(t target, done string) tool.Result {
	return tool.Errorf("%s changed while the call ran: a symbolic link now stands on the path that was checked. Nothing was %s.", t.abs, done)
}

// checkWritable refuses the two ways a write can land somewhere other than where it seems:
// a relative path whose `..` climbs out of the working directories, and a path inside them
// that a symlink leads out of. An absolute path outside is left to the permission gate.
func checkWritable(st tool.State, t target) (tool.Result, bool) {
	dirs := workDirs(st)
	if len(dirs) == 0 {
		return tool.Result{}, true
	}
	if !filepath.IsAbs(t.given) && slices.Contains(strings.Split(filepath.ToSlash(t.given), "/"), "..") &&
		!inAny(dirs, t.real) {
		return tool.Errorf("%s resolves to %s, outside the working directory %s. Give the absolute path if you mean to write there.",
			t.given, t.abs, st.Cwd), false
	}
	if inAny(cleanDirs(st), t.abs) || inAny(dirs, t.abs) {
		if !inAny(dirs, t.real) {
			return tool.Errorf("%s is reached through a symlink that points to %s, outside the working directory. Refusing to write through it; use the real path if you mean to change that file.",
				t.abs, t.real), false
		}
	}
	return tool.Result{}, true
}

// cleanDirs returns the working directories as given, cleaned but not resolved.
func cleanDirs(st tool.State) []string {
	var dirs []string
	for _, d := range append([]string{st.Cwd}, st.AdditionalDirs...) {
		if d != "" {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	return dirs
}

// notExist reports whether err says the file is missing.
func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
