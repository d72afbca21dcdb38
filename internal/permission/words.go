package permission

import (
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/toolpath"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// wordFile is one word of a command line read as a file name, for Read and Edit rules: what
// bash turns it into before the program sees it. keel resolves a word only where it can do
// so exactly as bash would — quote removal, brace expansion, a leading ~ or ~/, globbing —
// and otherwise says why it cannot ($VAR, ~+, ~user, $'…' escapes, an extended glob…): such a
// word makes the command ask whenever a Read or Edit deny or ask rule exists, after deny
// rules have looked at its likely values.
type wordFile struct {
	// pattern is the word in shell pattern syntax: quoted characters escaped, unquoted glob
	// characters live. glob says it holds some, so bash expands it against the filesystem
	// (and keeps it as written, unescaped, when nothing matches).
	pattern string
	glob    bool
	// tilde says the word starts with an unquoted ~ or ~/: the home directory.
	tilde bool
	// unresolved says why bash's value of the word is unknown; "" when it is known.
	unresolved string
	// guesses are values an unresolved word most likely has ("$PWD/x" is ./x, "~+/x" is ./x,
	// $'\x73ecret' is secret): deny and ask rules check them, allow rules never rely on them.
	guesses []string
}

// literal is the word's value when no glob applies: the pattern with its escapes removed.
func (f wordFile) literal() string { return toolpath.UnescapeGlob(f.pattern) }

// maxBraceFields caps the words one brace expansion is read as.
const maxBraceFields = 256

// fileWords reads w as bash would build arguments from it: one wordFile per brace-expanded
// field.
func fileWords(w *syntax.Word) []wordFile {
	word := *w
	if !syntax.SplitBraces(&word) {
		return []wordFile{fileWord(word.Parts)}
	}
	var out []wordFile
	for field, err := range expand.BracesSeq(nil, &word) {
		if err != nil || len(out) == maxBraceFields {
			return []wordFile{{unresolved: "a brace expansion too large to follow"}}
		}
		out = append(out, fileWord(field.Parts))
	}
	return out
}

// assignmentLikeRE is a word bash treats like an assignment even as an argument, expanding
// an unquoted ~ after its "=" or a ":" (dd of=~/x, PATH=a:~/b).
var assignmentLikeRE = lazy.Regexp{Expr: `^[A-Za-z_][A-Za-z0-9_]*=`}

// fileWord reads the parts of one field.
func fileWord(parts []syntax.WordPart) wordFile {
	var (
		f     wordFile
		b     strings.Builder // the pattern
		guess strings.Builder // the likely value of an unresolved word
		sure  = true          // guess is a full likely value
	)
	unresolved := func(why string) {
		if f.unresolved == "" {
			f.unresolved = why
		}
	}
	for i, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				prefix, _, slash := strings.Cut(v, "/")
				switch {
				case prefix == "~" && (slash || len(parts) == 1):
					f.tilde = true
					v = strings.TrimPrefix(v, "~")
					guess.WriteString("~")
				case prefix == "~":
					// ~"/x": bash expands no tilde whose prefix holds a quoted character.
					unresolved("a ~ followed by quotes")
				case prefix == "~+":
					unresolved("~+")
					guess.WriteString(".")
					v = strings.TrimPrefix(v, "~+")
				default:
					unresolved(prefix)
					sure = false
				}
			}
			if assignmentLikeRE.Get().MatchString(b.String()+v) && (strings.Contains(v, "=~") || strings.Contains(v, ":~")) {
				unresolved("a ~ after = or : in an assignment-like word")
			}
			b.WriteString(v)
			guess.WriteString(toolpath.UnescapeGlob(v))
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar && strings.Contains(v, `\`) {
				unresolved("$'…' quoting with escapes")
				v, _ = expand.Literal(expandConfig(), &syntax.Word{Parts: []syntax.WordPart{p}})
			}
			b.WriteString(pattern.QuoteMeta(v, 0))
			guess.WriteString(v)
		case *syntax.DblQuoted:
			lit := true
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					lit = false
				}
			}
			switch {
			case p.Dollar:
				unresolved(`$"…" (locale) quoting`)
			case !lit:
				unresolved("an expansion in double quotes")
				guessParts(&guess, p.Parts, i == 0, &sure)
				continue
			}
			v, err := expand.Literal(expandConfig(), &syntax.Word{Parts: []syntax.WordPart{p}})
			if err != nil {
				unresolved("a quoted part keel cannot read")
			}
			b.WriteString(pattern.QuoteMeta(v, 0))
			guess.WriteString(v)
		case *syntax.ParamExp:
			unresolved("a parameter expansion")
			guessParts(&guess, []syntax.WordPart{p}, i == 0, &sure)
		case *syntax.ExtGlob:
			unresolved("an extended glob")
			sure = false
		default:
			unresolved("an expansion")
			sure = false
		}
	}
	f.pattern = b.String()
	f.glob = f.unresolved == "" && pattern.HasMeta(f.pattern, 0)
	if f.unresolved != "" && sure && guess.Len() > 0 {
		f.guesses = []string{guess.String()}
	}
	return f
}

// guessParts adds the likely value of expansions to guess: $PWD and $HOME (and ${…} of them)
// at the start of a word are the cwd and the home directory; anything else is unknown.
func guessParts(guess *strings.Builder, parts []syntax.WordPart, first bool, sure *bool) {
	for j, q := range parts {
		switch q := q.(type) {
		case *syntax.Lit:
			guess.WriteString(q.Value)
		case *syntax.ParamExp:
			switch {
			case !first || j > 0 || guess.Len() > 0 || !simpleParam(q):
				*sure = false
			case q.Param.Value == "PWD":
				guess.WriteString(".")
			case q.Param.Value == "HOME":
				guess.WriteString("~")
			default:
				*sure = false
			}
		default:
			*sure = false
		}
	}
}
