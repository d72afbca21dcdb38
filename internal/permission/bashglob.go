package permission

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/toolpath"
	"mvdan.cc/sh/v3/pattern"
)

// maxGlobMatches caps the files one glob word is expanded to for Read and Edit rules; past
// it the word is treated as unresolved.
const maxGlobMatches = 256

// bashGlob expands a pattern (see wordFile) the way bash's pathname expansion does with its
// default options (no dotglob, nullglob, globstar, nocaseglob or extglob), relative to base:
// component by component, "*" and "?" never matching "/" or a leading ".", bracket
// expressions with "!" or "^", ranges and [:classes:]. For names that are plain ASCII the
// match is bash's; a name with other bytes (where bash's classes and "?" follow the locale)
// matches every pattern component, so the result is never smaller than bash's. ok is false
// when keel cannot tell what bash would match (a pattern bash reads differently, too many
// matches); the caller then asks.
func bashGlob(pat, base string) (matches []string, ok bool) {
	abs := strings.HasPrefix(pat, "/")
	prefixes := []string{""}
	if abs {
		prefixes[0] = "/"
	}
	parts := strings.Split(strings.TrimPrefix(pat, "/"), "/")
	for i, part := range parts {
		last := i == len(parts)-1
		if !pattern.HasMeta(part, 0) {
			lit := toolpath.UnescapeGlob(part)
			for j := range prefixes {
				prefixes[j] = joinGlob(prefixes[j], lit)
			}
			continue
		}
		re, err := pattern.Regexp(part, pattern.Filenames|pattern.EntireString|pattern.NoGlobStar)
		if err != nil {
			return nil, false
		}
		rx, err := regexp.Compile(re)
		if err != nil {
			return nil, false
		}
		explicitDot := strings.HasPrefix(part, ".") || strings.HasPrefix(part, `\.`)
		var next []string
		for _, prefix := range prefixes {
			dir := prefix
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(base, dir)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				name := e.Name()
				if strings.HasPrefix(name, ".") && !explicitDot {
					continue
				}
				if !asciiName(name) || rx.MatchString(name) {
					p := joinGlob(prefix, name)
					if !last && !isDir(filepath.Join(dir, name)) {
						continue
					}
					next = append(next, p)
					if len(next) > maxGlobMatches {
						return nil, false
					}
				}
			}
		}
		prefixes = next
	}
	if len(prefixes) == 1 && prefixes[0] == "" {
		return nil, true
	}
	return prefixes, true
}

func joinGlob(prefix, name string) string {
	switch {
	case prefix == "":
		return name
	case strings.HasSuffix(prefix, "/"):
		return prefix + name
	}
	return prefix + "/" + name
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func asciiName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
