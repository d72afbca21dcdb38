package permission

import (
	"errors"
	"regexp"
	"strings"
)

type bashForm int

const (
	bashExact    bashForm = iota // Bash(git status)
	bashPrefix                   // Bash(npm run test:*)
	bashWildcard                 // Bash(npm *), Bash(git * main)
)

// bashPattern matches one simple command. Exact and prefix forms compare
// words after the shell's quote removal, so `git "status"` is git status;
// the wildcard form matches the canonical text, where * spans anything,
// spaces included.
type bashPattern struct {
	form  bashForm
	words []string
	re    *regexp.Regexp
	// wildHead is set when the command name itself is a wildcard; such a
	// pattern never covers a command that runs other code (bash -c, sudo,
	// xargs, python...), or `Bash(* --help)` would allow `bash -c 'rm -rf ~' --help`.
	wildHead bool
	// named are a wildcard rule's own words, for the options it names (dangerous.go).
	named []string
}

func parseBashPattern(spec string) (*bashPattern, error) {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		if strings.Contains(prefix, "*") {
			return nil, errors.New(`a ":*" prefix rule cannot hold another "*"; use the wildcard form, e.g. Bash(npm run * --watch)`)
		}
		words, err := literalWords(prefix)
		if err != nil {
			return nil, err
		}
		return &bashPattern{form: bashPrefix, words: words}, nil
	}
	if strings.Contains(spec, ":*") {
		return nil, errors.New(`":*" is only allowed at the end of a Bash rule`)
	}
	if hasUnescapedStar(spec) {
		return compileWildcard(spec)
	}
	words, err := literalWords(spec)
	if err != nil {
		return nil, err
	}
	return &bashPattern{form: bashExact, words: words}, nil
}

// literalWords splits a rule's command text the way the shell would split a
// command, requiring one simple command of plain words.
func literalWords(s string) ([]string, error) {
	a := analyzeShell(s)
	if len(a.opaque) > 0 || len(a.cmds) != 1 {
		return nil, errors.New("a Bash rule names one command of plain words; write one rule per command (compound commands are split and each part checked)")
	}
	var words []string
	for _, w := range a.cmds[0].words {
		if !w.static {
			return nil, errors.New("a Bash rule names one command of plain words; write one rule per command (compound commands are split and each part checked)")
		}
		words = append(words, w.value)
	}
	return words, nil
}

func hasUnescapedStar(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*':
			return true
		}
	}
	return false
}

func compileWildcard(spec string) (*bashPattern, error) {
	var (
		b     strings.Builder
		stars int
	)
	head, _, _ := strings.Cut(strings.TrimSpace(spec), " ")
	p := &bashPattern{form: bashWildcard, wildHead: hasUnescapedStar(head), named: strings.Fields(spec)}
	// "ls *" also matches plain "ls", as in Claude Code: a single trailing
	// " *" is optional.
	body, optionalTail := spec, false
	if strings.Count(spec, "*")-strings.Count(spec, `\*`) == 1 && strings.HasSuffix(spec, " *") {
		body, optionalTail = strings.TrimSuffix(spec, " *"), true
	}
	b.WriteString(`^(?s:`)
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '\\' && i+1 < len(body):
			i++
			b.WriteString(regexp.QuoteMeta(body[i : i+1]))
		case c == '*':
			stars++
			b.WriteString(`.*`)
		default:
			b.WriteString(regexp.QuoteMeta(body[i : i+1]))
		}
	}
	if optionalTail {
		b.WriteString(`(?: .*)?`)
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	p.re = re
	return p, nil
}

// match reports whether an allow rule covers c: words compared exactly, the command name
// included, so Bash(git status) never covers /tmp/git status.
func (p *bashPattern) match(c simpleCmd) bool {
	if p.wildHead && runsOtherCode(c.name()) {
		return false
	}
	return p.matchWith(c, func(rule, cmd string) bool { return rule == cmd })
}

// matchDeny reports whether a deny or ask rule names c. Command names are compared by the
// base name of the program on both sides: /bin/rm, ./rm and rm are one program to a deny rule.
func (p *bashPattern) matchDeny(c simpleCmd) bool {
	return p.matchWith(c, func(rule, cmd string) bool { return baseName(rule) == baseName(cmd) })
}

func (p *bashPattern) matchWith(c simpleCmd, sameName func(rule, cmd string) bool) bool {
	switch p.form {
	case bashExact, bashPrefix:
		if len(c.words) < len(p.words) || (p.form == bashExact && len(c.words) != len(p.words)) {
			return false
		}
		for i, w := range p.words {
			if !c.words[i].static {
				return false
			}
			if i == 0 && !sameName(w, c.words[0].value) || i > 0 && c.words[i].value != w {
				return false
			}
		}
		return true
	default:
		if len(c.words) > 0 && !c.words[0].static {
			return false
		}
		return p.re.MatchString(c.canonical())
	}
}
