package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxGlobMatches bounds the masks of one Read deny glob, so a pattern such as **/*.go in a
// large tree cannot turn every sandbox start into thousands of mounts. Past it, the
// directory holding every match is masked instead: never fewer than the rule names.
const maxGlobMatches = 256

// readDenyPaths are the existing paths a Read(...) deny rule's specifier covers, to be masked:
// the path itself for a literal, the directory for dir/**, and the matches of a glob (a glob
// found at any depth is searched below cwd). Past maxGlobMatches matches it is the one
// directory holding them all, and whole is true. Anchors follow the
// permission rules: //abs, ~/home, anything else (/x included) relative to cwd, the rule's
// directory.
func readDenyPaths(spec, cwd, home string) (paths []string, whole bool) {
	base, glob := readDenyBase(spec, cwd, home)
	if base == "" {
		return nil, false
	}
	if !glob {
		if _, err := os.Lstat(base); err != nil {
			return nil, false
		}
		return []string{base}, false
	}
	return globPaths(base)
}

// readDenyBase is the absolute path, or glob, a Read(...) deny rule's specifier covers (a
// directory's with dir/**); "" when it covers nothing keel can name. glob says the
// specifier is one (cwd and home are literal whatever they hold).
func readDenyBase(spec, cwd, home string) (base string, glob bool) {
	s := filepath.ToSlash(spec)
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		s = "." + s
	}
	anyDepth := !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~") && !strings.HasPrefix(s, ".") &&
		!strings.Contains(strings.TrimSuffix(s, "/"), "/")
	s = strings.TrimSuffix(s, "/")
	for strings.HasSuffix(s, "/**") {
		s = strings.TrimSuffix(s, "/**")
	}
	if s == "" || s == "**" {
		return "", false
	}
	if anyDepth {
		s = "./**/" + s
	}
	return absPath(s, cwd, home), strings.ContainsAny(s, "*?[{")
}

// globPaths are the existing paths the absolute glob base matches, or past maxGlobMatches
// the one directory holding them all (whole).
func globPaths(base string) (paths []string, whole bool) {
	// The literal directories before the first glob segment, then the glob below them.
	dir, pattern := base, ""
	for strings.ContainsAny(dir, "*?[{") {
		pattern = filepath.Join(filepath.Base(dir), pattern)
		dir = filepath.Dir(dir)
	}
	var out []string
	common := ""
	_ = doublestar.GlobWalk(os.DirFS(dir), filepath.ToSlash(pattern), func(p string, _ fs.DirEntry) error {
		m := filepath.Join(dir, p)
		if len(out) < maxGlobMatches {
			out = append(out, m)
			return nil
		}
		if common == "" {
			common = filepath.Dir(out[0])
			for _, o := range out[1:] {
				common = commonDir(common, o)
			}
		}
		common = commonDir(common, m)
		return nil
	})
	if common != "" {
		return []string{common}, true
	}
	return out, false
}

// commonDir is the deepest directory that is dir or holds it and holds path.
func commonDir(dir, path string) string {
	for !within(path, dir) {
		dir = filepath.Dir(dir)
	}
	return dir
}

// SettingsPath is the absolute path a sandbox setting's path s names (filesystem.denyRead,
// allowRead…) as the sandbox reads it — ~/ under home, // and / absolute, anything else
// under cwd — or "" when it names none: for the Read deny rules keel's own tools apply to
// the masks ([permission.MaskRule]).
func SettingsPath(s, cwd, home string) string { return absPath(s, cwd, home) }
