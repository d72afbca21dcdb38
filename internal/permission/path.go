package permission

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/keel-dev/keel/internal/toolpath"
)

// anchor says what a path pattern is relative to, following Claude Code's
// documented meaning: //path is absolute, ~/path is under the home directory,
// /path is relative to the rule's settings file (Source.Dir: the project for a
// project's files), and path or ./path is relative to the current working
// directory — from every settings file, the user's included, so a user-level
// Read(./.env) covers each project's .env. A pattern without a slash matches at
// any depth below the working directory (gitignore semantics).
type anchor int

const (
	anchorCwd anchor = iota
	anchorAnyDepth
	anchorAbsolute
	anchorHome
	anchorSettings
)

type pathPattern struct {
	anchor anchor
	// glob is slash-separated and relative to the anchor's directory, with
	// leading "../" steps already moved into up.
	glob string
	up   int
	// except are absolute paths, as written and resolved, below which the pattern matches
	// nothing: a mask's allowRead ([MaskRule]).
	except []string
	// mask names the setting that masks what the pattern covers ([MaskRule]).
	mask string
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
		p.anchor, s = anchorSettings, strings.TrimLeft(s, "/")
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

// base is the directory the pattern's glob is relative to, when relative patterns are
// anchored at dir; "" when it has none (a ~ pattern without a home).
func (p *pathPattern) base(dir, home string) string {
	base := dir
	switch p.anchor {
	case anchorAbsolute:
		base = string(filepath.Separator)
	case anchorHome:
		base = home
	}
	if base == "" {
		return ""
	}
	for range p.up {
		base = filepath.Dir(base)
	}
	return base
}

// match reports whether the absolute, cleaned path abs is covered by the
// pattern when relative patterns are anchored at dir.
func (p *pathPattern) match(abs, dir, home string) bool {
	base := p.base(dir, home)
	if base == "" {
		return false
	}
	for _, e := range p.except {
		if toolpath.Within(abs, e) {
			return false
		}
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
