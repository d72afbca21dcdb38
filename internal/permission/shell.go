package permission

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/lazy"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// shellWord is one argument of a simple command. A static word has a value known before the
// shell runs; a dynamic one (with $VAR, a glob the shell may rewrite…) keeps its source text
// and never equals a literal rule word. guess is what a dynamic word most likely becomes
// ($'\x72m' is rm): deny and ask rules look at it, allow rules never do.
type shellWord struct {
	value  string
	static bool
	guess  string
	// files is what the word is as a file name, per brace-expanded field (words.go).
	files []wordFile
}

// simpleCmd is one command the shell would execute: a name and arguments.
type simpleCmd struct {
	words []shellWord
}

func (c simpleCmd) name() string {
	if len(c.words) == 0 || !c.words[0].static {
		return ""
	}
	return c.words[0].value
}

// canonical renders the command with each static word quoted only when it
// holds characters the shell treats specially, so "git status" stays as
// written and an argument like "a; rm x" stays visibly one argument.
func (c simpleCmd) canonical() string {
	parts := make([]string, len(c.words))
	for i, w := range c.words {
		parts[i] = w.value
		if w.static {
			parts[i] = quoteWord(w.value)
		}
	}
	return strings.Join(parts, " ")
}

func (c simpleCmd) String() string { return c.canonical() }

// from returns the command made of the words from i on.
func (c simpleCmd) from(i int) simpleCmd { return simpleCmd{words: c.words[i:]} }

// guessed returns the command with dynamic words replaced by their likely values, for deny
// and ask rules.
func (c simpleCmd) guessed() (simpleCmd, bool) {
	if !slices.ContainsFunc(c.words, func(w shellWord) bool { return !w.static && w.guess != "" }) {
		return c, false
	}
	changed := false
	out := simpleCmd{words: make([]shellWord, len(c.words))}
	for i, w := range c.words {
		if !w.static && w.guess != "" {
			w = shellWord{value: w.guess, static: true, files: w.files}
			changed = true
		}
		out.words[i] = w
	}
	return out, changed
}

var plainWordRE = lazy.Regexp{Expr: `^[A-Za-z0-9_./+@%:,=*?~^!\[\]{}-]+$`}

func quoteWord(s string) string {
	if plainWordRE.Get().MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellAnalysis is what a command line means for permission matching.
type shellAnalysis struct {
	// cmds are the simple commands the line runs, as written.
	cmds []simpleCmd
	// allow holds, for each of cmds, what allow rules must cover: the command with transparent
	// wrappers (timeout, nice, command…) removed. When opaque is empty, allowing each allows
	// the line.
	allow []simpleCmd
	// opaque lists why no allow rule can cover the line: substitutions, control flow, a
	// construct keel's parser may read differently from bash…
	opaque []string
	// deny holds every command the line may run, each in every spelling a deny or ask rule
	// may name it: as written, by base name (/bin/rm is rm), with git's global options
	// skipped, inside wrappers, shells and eval, and as bash would split lines keel's parser
	// joins.
	deny []simpleCmd
	// reads and writes are the files redirections open; network lists the /dev/tcp and
	// /dev/udp targets bash connects to.
	reads, writes []wordFile
	network       []string
	// uses are the words the commands may use as files, with what they do with them
	// (programs.go): Read and Edit deny and ask rules also refuse a command that names a file
	// they cover (cat secrets/token.txt, cp x protected/y).
	uses fileUses
	// changesDir is set when a command may change the directory later relative redirections
	// are opened from; cdTargets are the directories it changes to, in order, when all are
	// known (cdUnknown otherwise).
	changesDir bool
	cdTargets  []string
	cdUnknown  bool
	// uncheckedWhy lists what deny and ask rules cannot be checked against (python code, a
	// script read from stdin) although allow rules may name the command; bypassPermissions
	// asks about such a line when Bash deny or ask rules exist.
	uncheckedWhy []string
	// denyWords counts the words of every deny view, against maxDenyWords.
	denyWords  int
	overBudget bool
	// files says uses are wanted (analyzeShellFiles).
	files bool
}

func (a *shellAnalysis) addOpaque(format string, args ...any) {
	a.opaque = append(a.opaque, fmt.Sprintf(format, args...))
}

func (a *shellAnalysis) unchecked(format string, args ...any) {
	a.uncheckedWhy = append(a.uncheckedWhy, fmt.Sprintf(format, args...))
}

// addBlind records a construct that hides commands from deny rules as well as allow rules: a
// computed command name, a parse keel cannot trust, arithmetic that may evaluate a
// variable's text as code.
func (a *shellAnalysis) addBlind(format string, args ...any) {
	a.addOpaque(format, args...)
	a.unchecked(format, args...)
}

// commandNameRE is what a command name may look like for an allow rule to
// apply: no globs, braces or quotes that the shell would rewrite.
var commandNameRE = lazy.Regexp{Expr: `^[A-Za-z0-9_./+@%:][A-Za-z0-9_./+@%:-]*$`}

// Limits past which a command is asked about instead of analysed: bash reads it fine, but a
// line this long or this deep is no command a person reviews, and parsing it costs time.
const (
	maxCommandBytes = 64 << 10
	maxNesting      = 64
	// maxShellDepth bounds how deep bash -c, eval and wrapper strings are followed.
	maxShellDepth = 4
)

func analyzeShell(command string) shellAnalysis {
	return analyzeShellDepth(command, 0, false)
}

// analyzeShellFiles also reads what the commands do with files (uses), which Read and Edit
// rules need and nothing else does.
func analyzeShellFiles(command string) shellAnalysis {
	return analyzeShellDepth(command, 0, true)
}

func analyzeShellDepth(command string, depth int, files bool) shellAnalysis {
	a := shellAnalysis{files: files}
	if strings.TrimSpace(command) == "" {
		a.addOpaque("empty command")
		return a
	}
	if len(command) > maxCommandBytes || nesting(command) > maxNesting || strings.ContainsRune(command, 0) {
		// Too costly to parse, or not a shell text at all: asked about, deny rules unchecked.
		a.addBlind("%s", unsafeText(command))
		return a
	}
	if reason := unsafeText(command); reason != "" {
		a.addOpaque("%s", reason)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)).Parse(strings.NewReader(command), "")
	if err != nil {
		a.addBlind("unparseable command: %v", err)
		a.addSplitVariant(command, depth)
		return a
	}
	a.walk(command, f, depth)
	a.addSplitVariant(command, depth)
	if len(a.cmds) == 0 && len(a.opaque) == 0 {
		a.addOpaque("no command")
	}
	return a
}

// unsafeText names what in the raw text keel's parser and bash may read differently, so that
// the line must be asked about whatever it parses to: carriage returns (bash keeps them in
// words, the parser folds "\\\r\n" into a line continuation), other control characters,
// invalid UTF-8, a NUL, and lines too long or too deep to analyse.
func unsafeText(s string) string {
	switch {
	case len(s) > maxCommandBytes:
		return fmt.Sprintf("a command over %d KB", maxCommandBytes>>10)
	case strings.ContainsRune(s, 0):
		return "NUL byte in command"
	case !utf8.ValidString(s):
		return "bytes that are not UTF-8"
	case strings.ContainsRune(s, '\r'):
		return "a carriage return"
	}
	for _, c := range s {
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return fmt.Sprintf("control character %U", c)
		}
	}
	if nesting(s) > maxNesting {
		return fmt.Sprintf("nesting deeper than %d levels", maxNesting)
	}
	return ""
}

// nesting is the deepest run of unclosed (, { and [ in s, quotes ignored: an upper bound on
// how deep the parser would recurse.
func nesting(s string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{', '[':
			depth++
			deepest = max(deepest, depth)
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}

// splitVariant rewrites s the way bash may split it where keel's parser joins lines: every
// carriage return and every backslash-newline (in a comment bash ends the comment there)
// becomes a plain newline. Reading more commands than bash does is safe for deny rules.
var splitVariant = lazy.Value[*strings.Replacer]{New: func() *strings.Replacer {
	return strings.NewReplacer("\\\r\n", "\n", "\\\n", "\n", "\r", "\n")
}}

func (a *shellAnalysis) addSplitVariant(command string, depth int) {
	v := splitVariant.Get().Replace(command)
	if v == command {
		return
	}
	if depth >= maxShellDepth {
		a.addBlind("commands nested deeper than %d levels", maxShellDepth)
		return
	}
	inner := analyzeShellDepth(v, depth+1, a.files)
	a.deny = append(a.deny, inner.deny...)
	a.denyWords += inner.denyWords
}

func (a *shellAnalysis) walk(src string, f *syntax.File, depth int) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case nil, *syntax.File, *syntax.Word, *syntax.Lit, *syntax.SglQuoted,
			*syntax.DblQuoted, *syntax.BinaryCmd, *syntax.Subshell, *syntax.Block, *syntax.TimeClause,
			*syntax.ExtGlob, *syntax.BraceExp, *syntax.WordIter, *syntax.CaseItem:
			// Parts of constructs judged elsewhere; the commands inside are walked.
		case *syntax.Comment:
			// bash ends a comment at the newline whatever precedes it; keel's parser continues
			// it past a backslash-newline. A backslash anywhere in a comment is asked about.
			if strings.ContainsAny(n.Text, "\\\n") {
				a.addOpaque("a backslash in a comment")
			}
		case *syntax.Stmt:
			if n.Coprocess {
				a.addOpaque("coprocess")
			}
		case *syntax.CallExpr:
			a.callExpr(src, n, depth)
		case *syntax.Assign:
			// Reported by callExpr; the value is walked for substitutions.
		case *syntax.Redirect:
			a.redirect(src, n)
		case *syntax.ParamExp:
			if !simpleParam(n) {
				// ${X@P} and the like can run code held in a variable.
				a.addBlind("parameter expansion with operators")
			}
		case *syntax.CmdSubst:
			a.addOpaque("command substitution")
		case *syntax.ProcSubst:
			a.addOpaque("process substitution")
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			// Arithmetic evaluates variables' text, and a[$(cmd)] there runs cmd.
			a.addBlind("arithmetic evaluation")
		case *syntax.FuncDecl:
			a.addOpaque("function definition")
		case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
			a.addOpaque("control flow")
		case *syntax.CStyleLoop:
			a.addBlind("arithmetic evaluation")
		case *syntax.TestClause:
			a.addBlind("[[ test ]] clause")
		case *syntax.DeclClause:
			a.addBlind("declaration builtin")
		default:
			a.addBlind("unsupported shell construct %T", n)
		}
		return true
	})
}

func simpleParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Flags == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

func (a *shellAnalysis) callExpr(src string, c *syntax.CallExpr, depth int) {
	if len(c.Assigns) > 0 {
		// PATH=, LD_PRELOAD=, BASH_ENV= change what runs.
		a.addBlind("variable assignment")
	}
	if len(c.Args) == 0 {
		return
	}
	var cmd simpleCmd
	for _, w := range c.Args {
		cmd.words = append(cmd.words, wordsOf(src, w)...)
	}
	if len(cmd.words) == 0 {
		a.addBlind("command expands to nothing")
		return
	}
	head := src[c.Args[0].Pos().Offset():c.Args[0].End().Offset()]
	switch name := cmd.name(); {
	case !commandNameRE.Get().MatchString(name):
		a.addBlind("command name %s is not a plain word", cmd.words[0].value)
	case strings.ContainsAny(head, "{}"):
		a.addOpaque("brace expansion in the command name %s", head)
	}
	if a.files {
		a.uses.commandFiles(cmd, 0)
	}
	view := a.allowView(cmd)
	switch view.name() {
	case "cd", "pushd", "popd":
		a.changesDir = true
		switch {
		case view.name() != "popd" && len(view.words) == 2 && view.words[1].static && view.words[1].value != "-":
			a.cdTargets = append(a.cdTargets, view.words[1].value)
		case view.name() != "popd" && len(view.words) == 1:
			a.cdTargets = append(a.cdTargets, "~")
		default:
			a.cdUnknown = true
		}
	}
	a.cmds = append(a.cmds, cmd)
	a.allow = append(a.allow, view)
	a.addDeny(cmd, depth)
}

// wordsOf expands a static word the way bash would build argv from it
// (quote removal, brace expansion; no globbing, so "*.go" stays one word)
// and keeps a dynamic word as its source text.
func wordsOf(src string, w *syntax.Word) []shellWord {
	text := src[w.Pos().Offset():w.End().Offset()]
	files := fileWords(w)
	if staticWord(w) {
		if fields, err := expand.Fields(expandConfig(), w); err == nil && len(fields) == len(files) {
			out := make([]shellWord, len(fields))
			for i, f := range fields {
				out[i] = shellWord{value: f, static: true, files: files[i : i+1]}
			}
			return out
		}
	}
	dyn := shellWord{value: text, files: files}
	if quotedOnly(w) {
		if v, err := expand.Literal(expandConfig(), w); err == nil {
			dyn.guess = v
		}
	}
	return []shellWord{dyn}
}

func staticWord(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
		case *syntax.SglQuoted:
			// $'...' decodes escapes; without a backslash it is plain '...'.
			if p.Dollar && strings.Contains(p.Value, `\`) {
				return false
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return false
			}
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	// A leading ~ is expanded by the shell; keep it dynamic rather than
	// guess the home directory.
	if lit, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
		return false
	}
	return true
}

// quotedOnly reports whether w is made of literal text and quotes alone ($'..' and $".."
// included), so its value can be guessed without running anything.
func quotedOnly(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	if lit, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
		return false
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// expandConfig is a fresh expansion environment with no variables. Each call needs its own:
// mvdan.cc/sh/v3/expand fills in a nil *Config by writing to a shared global, a data race
// when tool calls are checked in parallel.
func expandConfig() *expand.Config {
	return &expand.Config{Env: expand.FuncEnviron(func(string) string { return "" })}
}
