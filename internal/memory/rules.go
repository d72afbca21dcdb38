package memory

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/goccy/go-yaml"

	"github.com/keel-dev/keel/internal/frontmatter"
)

// ruleMeta is the frontmatter a rules file may carry. Other keys are ignored.
type ruleMeta struct {
	Paths any `yaml:"paths"`
}

// parseRule strips a rule's frontmatter and reads its `paths:` globs. Bad frontmatter draws a
// warning naming the file and line; the rule then loads unconditionally, because dropping
// instructions silently is worse than applying them too widely.
func (l *loader) parseRule(f *File) {
	doc := frontmatter.Split([]byte(f.Content))
	if doc.YAML == nil {
		return
	}
	f.Content = string(doc.Body)
	globs, line, err := parseGlobs(doc.YAML)
	if err != nil {
		l.warn(f.Path, doc.YAMLLine+line, "frontmatter: "+err.Error()+"; rule applies to every file")
		return
	}
	f.Globs = globs
}

// parseGlobs reads the paths key: a list of globs, or one string of comma-separated globs.
// line is the 0-based line within the YAML of the problem, when known.
func parseGlobs(src []byte) (globs []string, line int, err error) {
	var meta ruleMeta
	if err := yaml.Unmarshal(src, &meta); err != nil {
		if se, ok := err.(yaml.Error); ok && se.GetToken() != nil && se.GetToken().Position != nil {
			line = se.GetToken().Position.Line - 1
		}
		return nil, line, fmt.Errorf("%s", firstLine(err.Error()))
	}
	var raw []string
	switch v := meta.Paths.(type) {
	case nil:
		return nil, 0, nil
	case string:
		raw = strings.Split(v, ",")
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, 0, fmt.Errorf("paths: %v is not a string", x)
			}
			raw = append(raw, s)
		}
	default:
		return nil, 0, fmt.Errorf("paths: want a list of globs or a string, got %T", v)
	}
	for _, g := range raw {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		g = strings.TrimPrefix(g, "./")
		if !doublestar.ValidatePattern(g) {
			return nil, 0, fmt.Errorf("paths: %q is not a valid glob", g)
		}
		globs = append(globs, g)
	}
	return globs, 0, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// matchesAny reports whether a touched path falls under the rule's base directory and matches
// one of its globs. A glob without a slash also matches the base name anywhere below (as
// gitignore does), so "*.go" covers internal/x.go.
func matchesAny(rule File, paths []string, cwd string) bool {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		rel, ok := within(rule.base, filepath.Clean(p))
		if !ok {
			continue
		}
		rel = filepath.ToSlash(rel)
		for _, g := range rule.Globs {
			if ok, _ := doublestar.Match(g, rel); ok {
				return true
			}
			if !strings.Contains(g, "/") {
				if ok, _ := doublestar.Match(g, filepath.Base(rel)); ok {
					return true
				}
			}
		}
	}
	return false
}
