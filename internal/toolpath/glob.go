package toolpath

import (
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// GlobRoot splits a Glob call into the directory it searches and the pattern matched below
// it. The pattern's own literal base joins the path: "/etc/**" searches /etc, "~/.ssh/*"
// searches ~/.ssh, "../other/*.go" searches the cwd's sibling, "src/**/*.go" searches src.
// So the permission check and the walk start at the same directory, wherever the pattern
// points. path may be empty (the cwd).
func GlobRoot(pattern, path, cwd, home string) (root Path, rest string) {
	pattern = filepath.ToSlash(Expand(pattern, home))
	base, rest := doublestar.SplitPattern(pattern)
	base = UnescapeGlob(base)
	switch {
	case filepath.IsAbs(base):
	case path != "":
		base = Expand(path, home) + "/" + base
	}
	if base == "" {
		base = "."
	}
	root = Resolve(base, cwd, home)
	root.Given = path
	return root, rest
}

// UnescapeGlob removes a glob's backslash escapes from a literal part of it, which names a
// real file ("a\[1\]" is the directory "a[1]"); doublestar and shell patterns escape alike.
func UnescapeGlob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
