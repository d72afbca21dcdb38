package builtin

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

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

// resolve goes through the one resolver the permission check also uses, so the file a tool
// opens is the file that was checked.
func resolve(st tool.State, given string) target {
	p := toolpath.Resolve(given, st.Cwd, "")
	return target{given: given, abs: p.Abs, real: p.Real}
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
