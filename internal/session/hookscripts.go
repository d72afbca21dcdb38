package session

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/toolpath"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// hookScripts finds the files a hook command runs, which must stay read-only in the sandbox
// since keel runs the hook outside it. The command is parsed as the shell would read it,
// from dir (where hooks run), following `cd DIR` (DIR literal or made of vars) to the
// commands after it:
//   - a command word that is a path (./lint.sh, tools/x, $CLAUDE_PROJECT_DIR/hk/pre.sh), the
//     script an interpreter is given (sh x.sh, python3 -u tools/x.py, node x.js, . ./env.sh,
//     bash < x.sh) and the files of a module python3 -m runs from dir (pkg/__init__.py,
//     pkg/mod.py) are protected whether or not they exist yet, when inside one of inside;
//   - any other word with a slash is protected when it names an existing file (a filter file,
//     a configuration a checker reads);
//   - the directory an interpreter looks code up in before anywhere else — a Python script's
//     own (sys.path[0], where a json.py put beside it shadows the standard library's),
//     python3 -m's working directory, a Node script's (require('./x') tries ./x before x.js)
//     — whole, when it lies below one of inside without being one: a command could otherwise
//     add a module there that the script imports.
//
// A word keel cannot know (another variable, a command substitution, a glob), or a relative
// one after a cd it cannot follow, is skipped: nothing is made up.
func hookScripts(command string, vars map[string]string, dir string, inside []string) []string {
	return findScripts(command, vars, dir, inside).paths
}

// scripts is what [findScripts] found in one command line.
type scripts struct {
	// paths are the files and directories to keep read-only.
	paths []string
	// exposed says a Python script runs from a directory that is itself one of the roots, so
	// cannot be kept read-only whole: the command should run with PYTHONSAFEPATH=1, which
	// leaves that directory off sys.path.
	exposed bool
}

// findScripts reads command as [hookScripts] describes.
func findScripts(command string, vars map[string]string, dir string, inside []string) scripts {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return scripts{}
	}
	w := newHookWalk(vars, inside)
	w.stmts(f.Stmts, dir)
	return w.result()
}

// argvScripts finds the files a program started with argv (not through a shell: an MCP or
// language server's command and args) runs, from dir, as [hookScripts] does.
func argvScripts(argv []string, vars map[string]string, dir string, inside []string) scripts {
	if len(argv) == 0 || argv[0] == "" {
		return scripts{}
	}
	words := make([]*syntax.Word, len(argv))
	for i, a := range argv {
		// Quoted: each is one word as it is, with nothing the shell would expand.
		words[i] = &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: a}}}
	}
	w := newHookWalk(vars, inside)
	w.call(words, nil, dir)
	return w.result()
}

func newHookWalk(vars map[string]string, inside []string) *hookWalk {
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return &hookWalk{vars: vars, inside: inside, cfg: &expand.Config{Env: expand.ListEnviron(env...)}}
}

func (w *hookWalk) result() scripts {
	slices.Sort(w.out)
	return scripts{paths: slices.Compact(w.out), exposed: w.exposed}
}

// hookWalk reads a hook command's statements in order. A directory of "" is one keel cannot
// know (after `cd $OTHER`).
type hookWalk struct {
	vars    map[string]string
	inside  []string
	cfg     *expand.Config
	out     []string
	exposed bool
}

func (w *hookWalk) stmts(list []*syntax.Stmt, dir string) string {
	for _, st := range list {
		dir = w.stmt(st, dir)
	}
	return dir
}

// stmt reads one statement run in dir and returns the directory the shell is in after it.
func (w *hookWalk) stmt(st *syntax.Stmt, dir string) string {
	if st == nil {
		return dir
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		return w.call(c.Args, st.Redirs, dir)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			w.stmt(c.X, dir) // each side of a pipe is a subshell
			w.stmt(c.Y, dir)
			return dir
		}
		return w.stmt(c.Y, w.stmt(c.X, dir))
	case *syntax.Block:
		return w.stmts(c.Stmts, dir)
	case *syntax.Subshell:
		w.stmts(c.Stmts, dir)
	case *syntax.TimeClause:
		return w.stmt(c.Stmt, dir)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond, dir)
			w.stmts(ic.Then, dir)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond, dir)
		w.stmts(c.Do, dir)
	case *syntax.ForClause:
		w.stmts(c.Do, dir)
	case *syntax.CaseClause:
		for _, it := range c.Items {
			w.stmts(it.Stmts, dir)
		}
	}
	return dir
}

// call reads one simple command, args its words and redirs its redirections, run in dir.
func (w *hookWalk) call(args []*syntax.Word, redirs []*syntax.Redirect, dir string) string {
	if len(args) == 0 {
		return dir // assignments only
	}
	name, ok := w.literal(args[0])
	if !ok {
		return dir
	}
	rest := args[1:]
	switch name {
	case "cd", "pushd":
		return w.cd(rest, dir)
	case "exec", "command", "nohup", "env":
		// Their options, and env's assignments, come before the command they run.
		for len(rest) > 0 {
			v, ok := w.literal(rest[0])
			if !ok || !(strings.HasPrefix(v, "-") || name == "env" && strings.Contains(v, "=")) {
				break
			}
			rest = rest[1:]
		}
		return w.call(rest, redirs, dir)
	}
	if strings.Contains(name, "/") {
		if p := w.add(name, dir, true); p != "" {
			if in, ok := interpreterOf(shebang(p)); ok && in.codeDir {
				w.codeDir(scriptDir(p), in.python())
			}
		}
	} else if in, ok := interpreterOf(name); ok {
		script, stdin := w.interpreted(in, rest, dir)
		if script != nil {
			if v, ok := w.literal(script); ok {
				if p := w.add(v, dir, true); p != "" && in.codeDir {
					w.codeDir(scriptDir(p), in.python())
				}
			}
		}
		if stdin {
			w.stdinScript(in, redirs, dir)
		}
	}
	for _, a := range rest {
		if v, ok := w.literal(a); ok && strings.Contains(v, "/") {
			w.add(v, dir, false)
		}
	}
	return dir
}

// shebang is the name of the interpreter the #! line of the file at p names (python3 for
// "#!/usr/bin/env python3", "#!/usr/bin/python3 -u"), or "" for none.
func shebang(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	name := filepath.Base(fields[0])
	if name == "env" {
		// env's options (-S) and assignments come before the program.
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") && !strings.Contains(f, "=") {
				return f
			}
		}
		return ""
	}
	return name
}

// scriptDir is the directory an interpreter running the script at p looks code up in: that of
// the file a link at p leads to, since Python and Node follow it first.
func scriptDir(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return filepath.Dir(real)
	}
	return filepath.Dir(p)
}

// stdinScript protects the file an interpreter that reads its script from stdin is given
// with `<` (bash < x.sh); for Python and Node the directory code is then looked up in is dir.
func (w *hookWalk) stdinScript(in interpreter, redirs []*syntax.Redirect, dir string) {
	for _, r := range redirs {
		if r.Op != syntax.RdrIn || r.N != nil && r.N.Value != "0" {
			continue
		}
		if v, ok := w.literal(r.Word); ok && w.add(v, dir, true) != "" && in.codeDir && dir != "" {
			w.codeDir(dir, true)
		}
	}
}

// cd is the directory `cd args` moves to from dir: "" when keel cannot tell.
func (w *hookWalk) cd(args []*syntax.Word, dir string) string {
	for len(args) > 0 {
		v, ok := w.literal(args[0])
		if !ok || v == "-" || !strings.HasPrefix(v, "-") {
			break
		}
		args = args[1:]
		if v == "--" {
			break
		}
	}
	if len(args) == 0 {
		return w.vars["HOME"]
	}
	v, ok := w.literal(args[0])
	if !ok || v == "-" {
		return ""
	}
	return resolveIn(v, dir)
}

// interpreter says how a program takes the script it runs as its first argument: the options
// that give it code instead (sh -c, python3 -m, node -e), after which no script follows, and
// those that take the next word as their value.
// A shell's -c may come bundled with other letters (-ec): bundled is that letter; stdin are
// the options after which it reads the script from stdin (sh -s).
// codeDir says it looks up the code a script loads in the script's directory first (Python's
// sys.path[0], Node's relative require); module is python's -m.
type interpreter struct {
	inline, valued, stdin []string
	bundled               byte
	codeDir               bool
	module                string
}

var shellInterp = interpreter{inline: []string{"-c"}, bundled: 'c', stdin: []string{"-s"},
	valued: []string{"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}}

var nodeInterp = interpreter{inline: []string{"-e", "--eval", "-p", "--print"}, codeDir: true,
	valued: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"}}

// interpreters is made on first use: a map literal is init work at every start.
var interpreters = lazy.Value[map[string]interpreter]{New: func() map[string]interpreter {
	return map[string]interpreter{
		"sh": shellInterp, "bash": shellInterp, "dash": shellInterp, "zsh": shellInterp, "ksh": shellInterp,
		"fish": {inline: []string{"-c", "--command"}},
		".":    {}, "source": {},
		"python": {inline: []string{"-c"}, valued: []string{"-W", "-X"}, codeDir: true, module: "-m"},
		"node":   nodeInterp,
		"ruby":   {inline: []string{"-e"}, valued: []string{"-I", "-r"}},
		"perl":   {inline: []string{"-e", "-E"}, valued: []string{"-I", "-M"}},
		"php":    {inline: []string{"-r"}, valued: []string{"-c", "-d"}},
		"lua":    {inline: []string{"-e"}, valued: []string{"-l"}},
		"tsx":    {inline: []string{"-e", "--eval", "-p", "--print"}, codeDir: true}, "ts-node": {inline: []string{"-e", "--eval", "-p", "--print"}, codeDir: true},
	}
}}

// python says in is Python's (the one with -m).
func (in interpreter) python() bool { return in.module != "" }

// interpreterOf is the interpreter a command named name is, if keel knows it (python3.12 is
// python).
func interpreterOf(name string) (interpreter, bool) {
	key := name
	if strings.HasPrefix(name, "python") && strings.Trim(name[len("python"):], "0123456789.") == "" {
		key = "python"
	}
	in, ok := interpreters.Get()[key]
	return in, ok
}

// interpreted is the script word in runs given args, or nil; stdin says it reads the script
// from its standard input instead (no script word, `-`, sh -s).
func (w *hookWalk) interpreted(in interpreter, args []*syntax.Word, dir string) (script *syntax.Word, stdin bool) {
	for i := 0; i < len(args); i++ {
		v, ok := w.literal(args[i])
		if !ok {
			return nil, false
		}
		switch {
		case v == "--":
			if i+1 < len(args) {
				return args[i+1], false
			}
			return nil, true
		case v == "-" || slices.Contains(in.stdin, v):
			return nil, true
		case !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+"):
			return args[i], false
		case in.module != "" && v == in.module:
			if i+1 < len(args) {
				if mod, ok := w.literal(args[i+1]); ok {
					w.module(mod, dir)
				}
			}
			return nil, false
		case slices.Contains(in.inline, v) || in.bundled != 0 && bundles(v, in.bundled):
			if in.bundled != 0 && i+1 < len(args) {
				w.inline(args[i+1], dir) // sh -c '…': a command line of its own, run from dir
			}
			return nil, false
		case slices.Contains(in.valued, v):
			i++
		}
	}
	return nil, true
}

// module protects the files of the module `python -m mod` runs from dir, where Python looks
// first: pkg/__init__.py and pkg/mod.py (or, for a package, its __init__.py and __main__.py),
// present or not, when the top-level package or module is in dir; a module found only
// elsewhere (python3 -m pytest) is installed code, not the project's. dir itself is then
// what sys.path starts with. So is the __pycache__ folder beside each of those files: Python
// runs a .pyc there in place of its source when its header matches the source's time and
// size, which a command can read (keel also moves the cache of what it runs outside
// elsewhere, [hostexec.PythonCache], but a hook may set its own).
func (w *hookWalk) module(mod, dir string) {
	parts := strings.Split(mod, ".")
	if dir == "" || slices.Contains(parts, "") || slices.ContainsFunc(parts, func(p string) bool { return strings.ContainsAny(p, "/\\") }) {
		return
	}
	top := filepath.Join(dir, parts[0])
	if fi, err := os.Stat(top); !(err == nil && fi.IsDir()) && !isRegular(top+".py") {
		return
	}
	base := dir
	for _, p := range parts[:len(parts)-1] {
		base = filepath.Join(base, p)
		w.add(filepath.Join(base, "__init__.py"), "", true)
		w.pycache(base)
	}
	last := filepath.Join(base, parts[len(parts)-1])
	if fi, err := os.Stat(last); err == nil && fi.IsDir() {
		w.add(filepath.Join(last, "__init__.py"), "", true)
		w.add(filepath.Join(last, "__main__.py"), "", true)
		w.pycache(last)
	} else {
		w.add(last+".py", "", true)
		w.pycache(base)
	}
	// PYTHONSAFEPATH would drop the working directory, and with it the module: not exposed.
	w.codeDir(dir, false)
}

// pycache protects the __pycache__ folder of pkg, present or not, when inside the roots.
func (w *hookWalk) pycache(pkg string) {
	if p := filepath.Join(pkg, "__pycache__"); withinAny(p, w.inside) {
		w.out = append(w.out, p)
	}
}

// codeDir keeps dir, where an interpreter looks code up first, read-only whole when it lies
// below a root without being one; a Python script's directory that is a root itself is
// exposed (python says whether PYTHONSAFEPATH would help).
func (w *hookWalk) codeDir(dir string, python bool) {
	switch {
	case dir == "" || !withinAny(dir, w.inside):
	case slices.Contains(w.inside, dir):
		w.exposed = w.exposed || python
	default:
		w.out = append(w.out, dir)
	}
}

// bundles reports whether v is a bundle of single-letter options (-ec) holding letter.
func bundles(v string, letter byte) bool {
	return len(v) > 1 && (v[0] == '-' || v[0] == '+') && v[1] != '-' && strings.IndexByte(v[1:], letter) >= 0
}

// add protects the file word names from dir: any existing file, or for a word that is run
// (runs) one absent yet inside the working directories. It returns the path protected, or "".
func (w *hookWalk) add(word, dir string, runs bool) string {
	if strings.Contains(word, "://") {
		return "" // a URL
	}
	p := resolveIn(word, dir)
	if p == "" {
		return ""
	}
	fi, err := os.Stat(p)
	switch {
	case err == nil:
		if fi.Mode().IsRegular() {
			w.out = append(w.out, p)
			return p
		}
	case runs && os.IsNotExist(err) && withinAny(p, w.inside):
		w.out = append(w.out, p)
		return p
	}
	return ""
}

// literal is the value the shell gives word when keel knows it: quotes removed, the known
// variables expanded, a leading ~ the home directory. Any other expansion (another variable,
// a command substitution, arithmetic), a glob or brace expansion makes it unknown.
func (w *hookWalk) literal(word *syntax.Word) (string, bool) {
	known := true
	syntax.Walk(word, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ParamExp:
			if n.Excl || n.Length || n.Width || n.Index != nil || n.Slice != nil || n.Repl != nil || n.Exp != nil || n.Names != 0 || n.Param == nil {
				known = false
			} else if _, ok := w.vars[n.Param.Value]; !ok {
				known = false
			}
		case *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob, *syntax.BraceExp:
			known = false
		}
		return known
	})
	if !known {
		return "", false
	}
	for _, part := range word.Parts {
		if l, ok := part.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "*?[{") {
			return "", false
		}
	}
	v, err := expand.Literal(w.cfg, word)
	return v, err == nil
}

// inline reads the command line a shell's -c is given.
func (w *hookWalk) inline(word *syntax.Word, dir string) {
	code, ok := w.literal(word)
	if !ok {
		return
	}
	if f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(code), ""); err == nil {
		w.stmts(f.Stmts, dir)
	}
}

// resolveIn is p made absolute from dir; "" when p is relative and dir unknown.
func resolveIn(p, dir string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, p)
}

func withinAny(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return toolpath.Within(p, d) })
}

func isRegular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
