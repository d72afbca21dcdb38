package hooks

import (
	"regexp"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// plainMatcher is a matcher that is only names and "|": Claude Code compares those exactly
// ("Edit|Write" matches Edit and Write, never NotebookEdit) and treats anything else as a
// regular expression.
var plainMatcher = lazy.Regexp{Expr: `^[A-Za-z0-9_|]+$`}

// matcher selects hooks by tool name (or, for some events, source, trigger, agent type).
type matcher struct {
	all   bool
	exact []string
	re    *regexp.Regexp
}

// compileMatcher reads a matcher as Claude Code does: "" or "*" matches everything; names joined
// by "|" match exactly; anything else is an unanchored regular expression ("mcp__github__.*",
// "Notebook.*"). Go's RE2 lacks lookaround, so a few JavaScript patterns do not compile.
func compileMatcher(s string) (matcher, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "*":
		return matcher{all: true}, nil
	case plainMatcher.Get().MatchString(s):
		return matcher{exact: strings.Split(s, "|")}, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return matcher{}, err
	}
	return matcher{re: re}, nil
}

func (m matcher) match(name string) bool {
	switch {
	case m.all:
		return true
	case m.re != nil:
		return m.re.MatchString(name)
	}
	return slices.Contains(m.exact, name)
}
