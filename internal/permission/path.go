package permission

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// anchor says what a path pattern is relative to, following Claude Code:
// //path is absolute, ~/path is under the home directory, /path and ./path
// and any pattern with an inner slash are relative to the rule's source
// directory, and a pattern without a slash matches at any depth below it
// (gitignore semantics).
type anchor int

const (
	anchorSource anchor = iota
	anchorAnyDepth
	anchorAbsolute
	anchorHome
)

type pathPattern struct {
	anchor anchor
	// glob is slash-separated and relative to the anchor's directory, with
	// leading "../" steps already moved into up.
	glob string
	up   int
}

func parsePathPattern(spec string) (*pathPattern, error) {
	p := &pathPattern{}
	s := filepath.ToSlash(spec)
	switch {
	case strings.HasPrefix(s, "//"):
		p.anchor, s = anchorAbsolute, strings.TrimLeft(s, "/")
	case s == "~" || strings.HasPrefix(s, "~/"):
		p.anchor, s = anchorHome, strings.TrimPrefix(strings.TrimPrefix(s, "~"), "/")
	case strings.HasPrefix(s, "/"):
		s = strings.TrimLeft(s, "/")
	case strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../"):
	case !strings.Contains(strings.TrimSuffix(s, "/"), "/"):
		p.anchor = anchorAnyDepth
	}
	// A trailing slash names a directory; everything in it matches anyway.
	s = strings.TrimSuffix(s, "/")
	if s == "" || s == "." {
		s = "**"
	}
	s = path.Clean(s)
	for s == ".." || strings.HasPrefix(s, "../") {
		if p.anchor == anchorAnyDepth {
			break
		}
		p.up++
		s = strings.TrimPrefix(strings.TrimPrefix(s, ".."), "/")
	}
	if s == "" {
		s = "**"
	}
	if strings.HasPrefix(s, "..") && (len(s) == 2 || s[2] == '/') {
		return nil, fmt.Errorf("path pattern %q climbs above its anchor", spec)
	}
	if !doublestar.ValidatePattern(s) {
		return nil, fmt.Errorf("path pattern %q is not a valid glob", spec)
	}
	p.glob = s
	return p, nil
}

// match reports whether the absolute, cleaned path abs is covered by the
// pattern when relative patterns are anchored at dir.
func (p *pathPattern) match(abs, dir, home string) bool {
	base := dir
	switch p.anchor {
	case anchorAbsolute:
		base = string(filepath.Separator)
	case anchorHome:
		base = home
	}
	if base == "" {
		return false
	}
	for range p.up {
		base = filepath.Dir(base)
	}
	rel, err := filepath.Rel(base, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	rel = filepath.ToSlash(rel)
	glob := p.glob
	if p.anchor == anchorAnyDepth {
		glob = "**/" + glob
	}
	// A pattern naming a directory covers everything below it.
	if ok, _ := doublestar.Match(glob, rel); ok {
		return true
	}
	ok, _ := doublestar.Match(glob+"/**", rel)
	return ok
}

// ResolvePath returns the absolute path the kernel would reach for p
// (relative to cwd): symlinks are followed component by component, ".."
// steps apply to the resolved prefix as they do in open(2), and a path that
// does not exist yet is resolved as far as it exists, including a dangling
// symlink's target. File tools should act on this path so the permission
// check and the write see the same file.
func ResolvePath(p, cwd string) string {
	if !filepath.IsAbs(p) {
		// Not Join, which would apply ".." before symlinks are resolved.
		p = cwd + string(filepath.Separator) + p
	}
	return resolve(p, 0)
}

const maxLinks = 40

func resolve(p string, depth int) string {
	if depth > maxLinks {
		return filepath.Clean(p)
	}
	vol := filepath.VolumeName(p)
	dest := vol + string(filepath.Separator)
	parts := strings.Split(filepath.ToSlash(p[len(vol):]), "/")
	for i, c := range parts {
		switch c {
		case "", ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Nothing below a missing component exists, so the rest is
			// lexical.
			return filepath.Join(append([]string{next}, parts[i+1:]...)...)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			dest = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			return filepath.Join(append([]string{next}, parts[i+1:]...)...)
		}
		if !filepath.IsAbs(target) {
			// Not Join: ".." in a link target must apply after resolving.
			target = dest + string(filepath.Separator) + target
		}
		dest = resolve(target, depth+1)
	}
	return dest
}

// within reports whether abs is dir or below it. Both must be clean.
func within(abs, dir string) bool {
	rel, err := filepath.Rel(dir, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
