package permission

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/toolpath"
)

// suggest proposes the allow rules that would let a call through, for an
// "always allow" choice and for the headless denial message. Rules are
// narrow: a command and its subcommand, a single file, one domain.
func suggest(p *prepared, dirs []string) []Rule {
	var texts []string
	switch p.kind {
	case KindShell:
		if len(p.shell.opaque) > 0 {
			return nil
		}
		for _, c := range p.shell.allow {
			if t := suggestBash(c); t != "" && !slices.Contains(texts, t) {
				texts = append(texts, t)
			}
		}
	case KindRead, KindEdit:
		tool := "Read"
		if p.kind == KindEdit {
			tool = "Edit"
		}
		for _, path := range p.paths {
			texts = append(texts, tool+"("+globEscaper.Get().Replace(suggestPath(path.resolved, dirs))+")")
		}
	case KindFetch:
		if p.host != "" {
			texts = append(texts, "WebFetch(domain:"+p.host+")")
		}
	default:
		texts = append(texts, p.tool)
	}
	var rules []Rule
	for _, t := range texts {
		if r, err := ParseRule(t, Allow, Source{Name: "session"}); err == nil {
			rules = append(rules, r)
		}
	}
	return rules
}

// subcommandRE is a second word that reads as a subcommand: a word of letters, with digits,
// dashes or underscores after the first letter.
var subcommandRE = lazy.Regexp{Expr: `^[A-Za-z][A-Za-z0-9_-]*$`}
var globEscaper = lazy.Value[*strings.Replacer]{New: func() *strings.Replacer {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`, "{", `\{`, "}", `\}`)
}}

func suggestBash(c simpleCmd) string {
	for _, w := range c.words {
		if !w.static {
			return ""
		}
	}
	name := c.name()
	if runsOtherCode(name) {
		// Never suggest a prefix that would hand out a shell.
		return "Bash(" + c.canonical() + ")"
	}
	prefix := name
	if len(c.words) > 1 {
		// A subcommand (go test, git commit, npm run) narrows the rule; an argument (seq 1,
		// cat notes) would make a rule nobody writes, so it is left out.
		if w := c.words[1].value; subcommandRE.Get().MatchString(w) {
			prefix += " " + w
		}
	}
	if strings.Contains(prefix, ":") {
		return "Bash(" + c.canonical() + ")"
	}
	return "Bash(" + prefix + ":*)"
}

func suggestPath(abs string, dirs []string) string {
	if len(dirs) > 0 {
		root := toolpath.Real(dirs[0])
		if toolpath.Within(abs, root) {
			rel, _ := filepath.Rel(root, abs)
			return "./" + filepath.ToSlash(rel)
		}
	}
	return "/" + filepath.ToSlash(abs)
}
