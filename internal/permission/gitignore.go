package permission

import (
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// GitignoreUnder is what of dir the path rule r covers, as gitignore lines anchored at dir,
// when the working directory is cwd: for a copy of dir that must leave out what a Read deny
// rule covers (the shadow repository's captures). Each line may cover more than the rule — a
// brace alternative becomes a wildcard, a pattern reaching into dir through a wildcard is
// taken to reach anywhere below — never less. None when the rule has no path or covers
// nothing below dir.
func (r *Rule) GitignoreUnder(dir, cwd, home string) []string {
	if r.path == nil {
		return nil
	}
	base := r.path.base(r.root(cwd), home)
	if base == "" {
		return nil
	}
	glob := gitignoreGlob(r.path.glob)
	if r.path.anchor == anchorAnyDepth {
		glob = "**/" + glob
	}
	var pattern string
	if rel, err := filepath.Rel(dir, base); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		pattern = glob
		if rel != "." {
			pattern = GitignoreLiteral(filepath.ToSlash(rel)) + "/" + glob
		}
	} else if rel, err := filepath.Rel(base, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		// dir lies below the rule's base: the glob's leading segments must match dir's path.
		segs, dirSegs := strings.Split(glob, "/"), strings.Split(filepath.ToSlash(rel), "/")
		for len(dirSegs) > 0 {
			if len(segs) == 0 {
				return []string{"/*"} // the rule names dir or a directory holding it
			}
			if segs[0] == "**" {
				break // ** may take up the rest of dir's path: what follows it, at any depth
			}
			if ok, _ := doublestar.Match(segs[0], dirSegs[0]); !ok {
				return nil
			}
			segs, dirSegs = segs[1:], dirSegs[1:]
		}
		if len(segs) == 0 {
			return []string{"/*"}
		}
		pattern = strings.Join(segs, "/")
	} else {
		return nil
	}
	// A pattern naming a directory covers everything below it, as the rule does.
	return []string{"/" + pattern, "/" + pattern + "/**"}
}

// GitignoreLiteral escapes a slash-separated path for a gitignore line, so each character
// stands for itself.
func GitignoreLiteral(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	s := b.String()
	if strings.HasSuffix(s, " ") {
		s = strings.TrimSuffix(s, " ") + `\ `
	}
	return s
}

// gitignoreGlob is a doublestar glob as gitignore reads one: brace alternatives, which
// gitignore does not know, become a wildcard (** where one holds a slash): covering more,
// never less.
func gitignoreGlob(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '\\':
			b.WriteString(g[i:min(i+2, len(g))])
			i++
		case '{':
			j, depth := i, 0
			for ; j < len(g); j++ {
				if g[j] == '{' {
					depth++
				} else if g[j] == '}' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			if strings.Contains(g[i:min(j, len(g))], "/") {
				b.WriteString("**")
			} else {
				b.WriteByte('*')
			}
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
