package permission

import (
	"fmt"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// shellWord is one argument of a simple command. A static word has a value
// known before the shell runs; a dynamic one (with $VAR, $'..' and the like)
// keeps its source text and never equals a literal rule word.
type shellWord struct {
	value  string
	static bool
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

var plainWordRE = regexp.MustCompile(`^[A-Za-z0-9_./+@%:,=*?~^!\[\]{}-]+$`)

func quoteWord(s string) string {
	if plainWordRE.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellAnalysis is what a command line means for permission matching.
type shellAnalysis struct {
	// cmds are the simple commands the line runs. When opaque is empty they
	// are all of them, and allowing each allows the line.
	cmds []simpleCmd
	// opaque lists why no allow rule can cover the line: substitutions,
	// writing redirections, control flow, a parse error...
	opaque []string
	// wrapped are commands run by wrappers (sudo rm, bash -c "rm"), matched
	// only against deny and ask rules.
	wrapped []simpleCmd
}

func (a *shellAnalysis) addOpaque(format string, args ...any) {
	a.opaque = append(a.opaque, fmt.Sprintf(format, args...))
}

// commandNameRE is what a command name may look like for an allow rule to
// apply: no globs, braces or quotes that the shell would rewrite.
var commandNameRE = regexp.MustCompile(`^[A-Za-z0-9_./+@%:][A-Za-z0-9_./+@%:-]*$`)

const maxShellDepth = 4

func analyzeShell(command string) shellAnalysis {
	return analyzeShellDepth(command, 0)
}

func analyzeShellDepth(command string, depth int) shellAnalysis {
	var a shellAnalysis
	if strings.TrimSpace(command) == "" {
		a.addOpaque("empty command")
		return a
	}
	if strings.ContainsRune(command, 0) {
		a.addOpaque("NUL byte in command")
		return a
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		a.addOpaque("unparseable command: %v", err)
		return a
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case nil, *syntax.File, *syntax.Comment, *syntax.Word, *syntax.Lit, *syntax.SglQuoted,
			*syntax.DblQuoted, *syntax.BinaryCmd, *syntax.Subshell, *syntax.Block, *syntax.TimeClause,
			*syntax.ExtGlob, *syntax.BraceExp:
		case *syntax.Stmt:
			if n.Coprocess {
				a.addOpaque("coprocess")
			}
		case *syntax.CallExpr:
			a.callExpr(command, n, depth)
		case *syntax.Assign:
			// Reported by callExpr; the value is walked for substitutions.
		case *syntax.Redirect:
			a.redirect(n)
		case *syntax.ParamExp:
			if !simpleParam(n) {
				a.addOpaque("parameter expansion with operators")
			}
		case *syntax.CmdSubst:
			a.addOpaque("command substitution")
		case *syntax.ProcSubst:
			a.addOpaque("process substitution")
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			a.addOpaque("arithmetic evaluation")
		case *syntax.FuncDecl:
			a.addOpaque("function definition")
		case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
			a.addOpaque("control flow")
		case *syntax.TestClause:
			a.addOpaque("[[ test ]] clause")
		case *syntax.DeclClause:
			a.addOpaque("declaration builtin")
		default:
			a.addOpaque("unsupported shell construct %T", n)
		}
		return true
	})
	if len(a.cmds) == 0 && len(a.opaque) == 0 {
		a.addOpaque("no command")
	}
	return a
}

func simpleParam(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Flags == nil && !p.Excl && !p.Length && !p.Width && !p.IsSet &&
		p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

func (a *shellAnalysis) callExpr(src string, c *syntax.CallExpr, depth int) {
	if len(c.Assigns) > 0 {
		a.addOpaque("variable assignment")
	}
	if len(c.Args) == 0 {
		return
	}
	var cmd simpleCmd
	for _, w := range c.Args {
		cmd.words = append(cmd.words, wordsOf(src, w)...)
	}
	if len(cmd.words) == 0 {
		a.addOpaque("command expands to nothing")
		return
	}
	if name := cmd.name(); !commandNameRE.MatchString(name) {
		a.addOpaque("command name %s is not a plain word", cmd.words[0].value)
	}
	a.cmds = append(a.cmds, cmd)
	a.unwrap(cmd, depth)
}

// wordsOf expands a static word the way bash would build argv from it
// (quote removal, brace expansion; no globbing, so "*.go" stays one word)
// and keeps a dynamic word as its source text.
func wordsOf(src string, w *syntax.Word) []shellWord {
	if staticWord(w) {
		if fields, err := expand.Fields(nil, w); err == nil {
			out := make([]shellWord, len(fields))
			for i, f := range fields {
				out[i] = shellWord{value: f, static: true}
			}
			return out
		}
	}
	return []shellWord{{value: src[w.Pos().Offset():w.End().Offset()]}}
}

func staticWord(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
		case *syntax.SglQuoted:
			if p.Dollar {
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

// safeSinks are files a redirection may write without writing a file.
var safeSinks = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true}

func (a *shellAnalysis) redirect(r *syntax.Redirect) {
	if r.N != nil && !isDigits(r.N.Value) {
		a.addOpaque("named file descriptor {%s}", r.N.Value)
	}
	target := ""
	static := r.Word != nil && staticWord(r.Word)
	if static {
		target, _ = expand.Literal(nil, r.Word)
	}
	switch r.Op {
	case syntax.RdrIn:
	case syntax.DplIn, syntax.DplOut:
		if !static || !(isDigits(target) || target == "-" || safeSinks[target]) {
			a.addOpaque("redirection %s to a file", r.Op)
		}
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc != nil && !literalParts(r.Hdoc) {
			a.addOpaque("here-document with expansions")
		}
	case syntax.WordHdoc:
		if !static {
			a.addOpaque("here-string with expansions")
		}
	default: // >, >>, >|, &>, &>>, <>: these open files for writing.
		if !static || !safeSinks[target] {
			a.addOpaque("output redirection %s writes a file", r.Op)
		}
	}
}

func literalParts(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if _, ok := p.(*syntax.Lit); !ok {
			return false
		}
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

// execWrappers run their arguments as a command after options of their own.
var execWrappers = map[string]bool{
	"sudo": true, "doas": true, "env": true, "nohup": true, "nice": true, "ionice": true,
	"timeout": true, "time": true, "stdbuf": true, "command": true, "builtin": true, "exec": true,
	"xargs": true, "chroot": true, "setsid": true, "flock": true, "watch": true, "parallel": true,
	"strace": true, "ltrace": true, "unbuffer": true, "caffeinate": true, "runuser": true,
	"chrt": true, "taskset": true, "script": true, "su": true, "busybox": true,
}

// shells take a command string with -c.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true,
	"fish": true, "csh": true, "tcsh": true,
}

// interpreters run code from their arguments (-c, -e, a script) and so are
// never matched by a rule whose command name is a wildcard.
var interpreters = map[string]bool{
	"eval": true, "source": true, ".": true, "trap": true, "alias": true, "python": true,
	"python2": true, "python3": true, "node": true, "perl": true, "ruby": true, "php": true,
	"lua": true, "deno": true, "bun": true, "awk": true, "gawk": true, "mawk": true, "find": true,
	"osascript": true, "powershell": true, "pwsh": true, "expect": true, "tclsh": true,
}

// runsOtherCode reports whether a command with this name can run commands
// its arguments name.
func runsOtherCode(name string) bool {
	base := name[strings.LastIndexByte(name, '/')+1:]
	return execWrappers[base] || shells[base] || interpreters[base]
}

// unwrap records the commands a wrapper would run so deny and ask rules see
// them: every later plain word might start the wrapped command, and shell -c
// strings and eval arguments are parsed.
func (a *shellAnalysis) unwrap(cmd simpleCmd, depth int) {
	name := cmd.name()
	base := name[strings.LastIndexByte(name, '/')+1:]
	switch {
	case execWrappers[base]:
		for i := 1; i < len(cmd.words); i++ {
			w := cmd.words[i]
			if w.static && !strings.HasPrefix(w.value, "-") && !strings.Contains(w.value, "=") {
				inner := simpleCmd{words: cmd.words[i:]}
				a.wrapped = append(a.wrapped, inner)
				a.unwrap(inner, depth)
			}
		}
	case shells[base] || base == "eval":
		if depth >= maxShellDepth {
			return
		}
		var scripts []string
		if base == "eval" {
			var parts []string
			for _, w := range cmd.words[1:] {
				parts = append(parts, w.value)
			}
			scripts = append(scripts, strings.Join(parts, " "))
		} else {
			for i := 1; i+1 < len(cmd.words); i++ {
				w := cmd.words[i].value
				if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "c") {
					scripts = append(scripts, cmd.words[i+1].value)
					break
				}
			}
		}
		for _, s := range scripts {
			inner := analyzeShellDepth(s, depth+1)
			a.wrapped = append(a.wrapped, inner.cmds...)
			a.wrapped = append(a.wrapped, inner.wrapped...)
		}
	}
}
