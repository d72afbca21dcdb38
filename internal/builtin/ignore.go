package builtin

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/keel-dev/keel/internal/atomicfile"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	pattern  string // slash-separated, no leading "/" or "!" or trailing "/"
	negate   bool   // "!pattern" re-includes
	dirOnly  bool   // "pattern/" matches directories only
	anchored bool   // a "/" at the start or in the middle: relative to the file's directory
}

// parseIgnore parses .gitignore syntax: comments, blank lines, "\#" and "\!" escapes, trailing
// spaces (unless escaped), negation, directory-only and anchored patterns.
func parseIgnore(data []byte) []ignoreRule {
	var rules []ignoreRule
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		var r ignoreRule
		if line[0] == '!' {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if strings.Contains(line, "/") {
			r.anchored = true
			line = strings.TrimPrefix(line, "/")
		}
		if line == "" {
			continue
		}
		r.pattern = line
		rules = append(rules, r)
	}
	return rules
}

// match reports whether rel (slash-separated, relative to the rule's directory) matches.
func (r ignoreRule) match(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.anchored {
		ok, _ := doublestar.Match(r.pattern, rel)
		return ok
	}
	ok, _ := doublestar.Match(r.pattern, path.Base(rel))
	return ok
}

// ignoreFile is the rules of one .gitignore and the directory it sits in.
type ignoreFile struct {
	dir   string
	rules []ignoreRule
}

// ignoreStack is the .gitignore files that apply to a directory, outermost first.
type ignoreStack []*ignoreFile

// ignored reports whether abs is ignored: the last matching rule of the deepest file that has
// one decides, as in git.
func (s ignoreStack) ignored(abs string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		f := s[i]
		rel, err := filepath.Rel(f.dir, abs)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		rel = filepath.ToSlash(rel)
		for j := len(f.rules) - 1; j >= 0; j-- {
			if f.rules[j].match(rel, isDir) {
				return !f.rules[j].negate
			}
		}
	}
	return false
}

// with returns the stack plus the .gitignore of the held directory dir, whose path is p, if
// it has one.
func (s ignoreStack) with(dir *atomicfile.Dir, p string) ignoreStack {
	return s.withFile(p, readIgnoreFile(dir))
}

// withPath is with for a directory above the walk's root, read by path.
func (s ignoreStack) withPath(dir string) ignoreStack {
	data, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	return s.withFile(dir, data)
}

// withFile returns the stack plus the rules of data, the .gitignore of dir.
func (s ignoreStack) withFile(dir string, data []byte) ignoreStack {
	if len(bytes.TrimSpace(data)) == 0 {
		return s
	}
	rules := parseIgnore(data)
	if len(rules) == 0 {
		return s
	}
	return append(s[:len(s):len(s)], &ignoreFile{dir: dir, rules: rules})
}

// parentIgnores returns the .gitignore files above root up to the repository root (the
// nearest ancestor holding .git). Outside a repository only files at and below root count.
func parentIgnores(root string) ignoreStack {
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		return nil // root is the repository root
	}
	var dirs []string
	for d := filepath.Dir(root); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			var s ignoreStack
			for i := len(dirs) - 1; i >= 0; i-- {
				s = s.withPath(dirs[i])
			}
			return s
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}
