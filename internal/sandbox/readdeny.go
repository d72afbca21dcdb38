package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxGlobMatches bounds what one Read deny glob masks, so a pattern such as **/*.go in a
// large tree cannot turn every sandbox start into thousands of mounts.
const maxGlobMatches = 64

// readDenyPaths are the existing paths a Read(...) deny rule's specifier covers, to be masked:
// the path itself for a literal, the directory for dir/**, and the matches of a glob (at most
// maxGlobMatches; a glob found at any depth is searched below cwd). Anchors follow the
// permission rules: //abs, ~/home, anything else (/x included) relative to cwd, the rule's
// directory.
func readDenyPaths(spec, cwd, home string) []string {
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
		return nil
	}
	if anyDepth {
		s = "./**/" + s
	}
	base := absPath(s, cwd, home)
	if base == "" {
		return nil
	}
	if !strings.ContainsAny(s, "*?[{") {
		if _, err := os.Lstat(base); err != nil {
			return nil
		}
		return []string{base}
	}
	// The literal directories before the first glob segment, then the glob below them.
	dir, pattern := base, ""
	for strings.ContainsAny(dir, "*?[{") {
		pattern = filepath.Join(filepath.Base(dir), pattern)
		dir = filepath.Dir(dir)
	}
	var out []string
	_ = doublestar.GlobWalk(os.DirFS(dir), filepath.ToSlash(pattern), func(p string, _ fs.DirEntry) error {
		out = append(out, filepath.Join(dir, p))
		if len(out) >= maxGlobMatches {
			return fs.SkipAll
		}
		return nil
	})
	return out
}
