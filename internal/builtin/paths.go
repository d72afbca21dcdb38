package builtin

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/tool"
)

// absPath resolves p against the agent's cwd and cleans it (so `a/../b` becomes `b`).
func absPath(st tool.State, p string) string {
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(st.Cwd, p)
	}
	return filepath.Clean(p)
}

// realPath resolves the symlinks of abs. For a path that does not exist yet it resolves the
// deepest existing ancestor and appends the rest, so a new file under a linked directory is
// seen where it will really land.
func realPath(abs string) string {
	rest := ""
	p := abs
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

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

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func inAny(dirs []string, p string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(d, p) })
}

// target is a path a tool was asked to work on.
type target struct {
	given string // as the model wrote it
	abs   string // absolute, cleaned
	real  string // symlinks resolved; the key of the file-read state
}

func resolve(st tool.State, given string) target {
	abs := absPath(st, given)
	return target{given: given, abs: abs, real: realPath(abs)}
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
