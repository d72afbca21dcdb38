package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/toolpath"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// hookPaths are the files that decide what the session's hooks run, which keel runs outside
// the sandbox (unless sandbox.wrapHooks): the scripts the settings' and the plugins' hooks
// name ([hookScripts]), and of each plugin inside the working directories its manifest
// folder, hooks/ folder, .mcp.json and .lsp.json, and a hooks or servers file its manifest
// names there. A sandboxed command that could change one would run code outside at the next
// hook, or when the next session starts the plugin's servers.
func (s *Session) hookPaths() []string {
	inside := s.hookRoots()
	base := map[string]string{"CLAUDE_PROJECT_DIR": s.projectDir, "KEEL_PROJECT_DIR": s.projectDir}
	if home := userHome(); home != "" {
		base["HOME"] = home
	}
	var out []string
	scripts := func(groups []settings.HookGroup) {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if h.Command != "" {
					out = append(out, hookScripts(h.Command, hookVars(base, h.Env), s.projectDir, inside)...)
				}
			}
		}
	}
	scripts(s.settings.Hooks)
	for _, p := range loadedPlugins(s) {
		scripts(p.Hooks)
		root := filepath.Clean(p.Root)
		if !withinAny(root, inside) {
			continue
		}
		// What decides the hooks and servers keel starts from the plugin, outside the sandbox.
		out = append(out, filepath.Join(root, ".claude-plugin"), filepath.Join(root, "hooks"),
			filepath.Join(root, ".mcp.json"), filepath.Join(root, ".lsp.json"))
		files := make([]string, 0, len(p.Hooks)+len(p.MCP))
		for _, g := range p.Hooks {
			files = append(files, g.From.Path)
		}
		for _, d := range p.MCP {
			files = append(files, d.File)
		}
		for _, f := range files {
			if filepath.IsAbs(f) && isRegular(f) && withinAny(f, inside) {
				out = append(out, filepath.Clean(f))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hookRoots are the directories in which a hook script keel protects may be absent yet: the
// project and the working directories, where a sandboxed command could create it. Outside
// them a command cannot write, and a path keel made up there would only clutter the lists.
func (s *Session) hookRoots() []string {
	roots := []string{s.projectDir, s.opts.Cwd}
	roots = append(roots, s.state.AdditionalDirs...)
	var out []string
	for _, r := range roots {
		if filepath.IsAbs(r) {
			out = append(out, filepath.Clean(r))
		}
	}
	return out
}

// loadedPlugins are the session's plugins as loaded now; none before they are.
func loadedPlugins(s *Session) []*plugin.Plugin {
	if set := s.plug.Current(); set != nil {
		return set.Plugins
	}
	return nil
}

// hookVars are the variables keel knows a hook's command sees: the project's, and a plugin
// hook's own CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA from its environment.
func hookVars(base map[string]string, env []string) map[string]string {
	if len(env) == 0 {
		return base
	}
	vars := make(map[string]string, len(base)+len(env))
	for k, v := range base {
		vars[k] = v
	}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// hookScripts finds the files a hook command runs, which must stay read-only in the sandbox
// since keel runs the hook outside it. The command is parsed as the shell would read it,
// from dir (where hooks run), following `cd DIR` (DIR literal or made of vars) to the
// commands after it:
//   - a command word that is a path (./lint.sh, tools/x, $CLAUDE_PROJECT_DIR/hk/pre.sh) and the
//     script an interpreter is given (sh x.sh, python3 -u tools/x.py, node x.js, . ./env.sh)
//     are protected whether or not they exist yet, when inside one of inside;
//   - any other word with a slash is protected when it names an existing file (a filter file,
//     a configuration a checker reads).
//
// A word keel cannot know (another variable, a command substitution, a glob), or a relative
// one after a cd it cannot follow, is skipped: nothing is made up.
func hookScripts(command string, vars map[string]string, dir string, inside []string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	w := &hookWalk{vars: vars, inside: inside, cfg: &expand.Config{Env: expand.ListEnviron(env...)}}
	w.stmts(f.Stmts, dir)
	slices.Sort(w.out)
	return slices.Compact(w.out)
}

// hookWalk reads a hook command's statements in order. A directory of "" is one keel cannot
// know (after `cd $OTHER`).
type hookWalk struct {
	vars   map[string]string
	inside []string
	cfg    *expand.Config
	out    []string
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
		return w.call(c.Args, dir)
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

// call reads one simple command, args its words, run in dir.
func (w *hookWalk) call(args []*syntax.Word, dir string) string {
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
		return w.call(rest, dir)
	}
	if strings.Contains(name, "/") {
		w.add(name, dir, true)
	} else if script := w.interpreted(name, rest, dir); script != nil {
		if v, ok := w.literal(script); ok {
			w.add(v, dir, true)
		}
	}
	for _, a := range rest {
		if v, ok := w.literal(a); ok && strings.Contains(v, "/") {
			w.add(v, dir, false)
		}
	}
	return dir
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
// A shell's -c may come bundled with other letters (-ec): bundled is that letter.
type interpreter struct {
	inline, valued []string
	bundled        byte
}

var shellInterp = interpreter{inline: []string{"-c"}, bundled: 'c', valued: []string{"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}}

// interpreters is made on first use: a map literal is init work at every start.
var interpreters = lazy.Value[map[string]interpreter]{New: func() map[string]interpreter {
	return map[string]interpreter{
		"sh": shellInterp, "bash": shellInterp, "dash": shellInterp, "zsh": shellInterp, "ksh": shellInterp,
		"fish": {inline: []string{"-c", "--command"}},
		".":    {}, "source": {},
		"python": {inline: []string{"-c", "-m"}, valued: []string{"-W", "-X"}},
		"node": {inline: []string{"-e", "--eval", "-p", "--print"},
			valued: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"}},
		"ruby": {inline: []string{"-e"}, valued: []string{"-I", "-r"}},
		"perl": {inline: []string{"-e", "-E"}, valued: []string{"-I", "-M"}},
		"php":  {inline: []string{"-r"}, valued: []string{"-c", "-d"}},
		"lua":  {inline: []string{"-e"}, valued: []string{"-l"}},
		"tsx":  {inline: []string{"-e", "--eval", "-p", "--print"}}, "ts-node": {inline: []string{"-e", "--eval", "-p", "--print"}},
	}
}}

// interpreted is the script word an interpreter named name runs given args, or nil.
func (w *hookWalk) interpreted(name string, args []*syntax.Word, dir string) *syntax.Word {
	key := name
	if strings.HasPrefix(name, "python") && strings.Trim(name[len("python"):], "0123456789.") == "" {
		key = "python"
	}
	in, ok := interpreters.Get()[key]
	if !ok {
		return nil
	}
	for i := 0; i < len(args); i++ {
		v, ok := w.literal(args[i])
		if !ok {
			return nil
		}
		switch {
		case v == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return nil
		case !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+") || v == "-":
			if v == "-" {
				return nil // the script is read from stdin
			}
			return args[i]
		case slices.Contains(in.inline, v) || in.bundled != 0 && bundles(v, in.bundled):
			if in.bundled != 0 && i+1 < len(args) {
				w.inline(args[i+1], dir) // sh -c '…': a command line of its own, run from dir
			}
			return nil
		case slices.Contains(in.valued, v):
			i++
		}
	}
	return nil
}

// bundles reports whether v is a bundle of single-letter options (-ec) holding letter.
func bundles(v string, letter byte) bool {
	return len(v) > 1 && (v[0] == '-' || v[0] == '+') && v[1] != '-' && strings.IndexByte(v[1:], letter) >= 0
}

// add protects the file word names from dir: any existing file, or for a word that is run
// (runs) one absent yet inside the working directories.
func (w *hookWalk) add(word, dir string, runs bool) {
	if strings.Contains(word, "://") {
		return // a URL
	}
	p := resolveIn(word, dir)
	if p == "" {
		return
	}
	fi, err := os.Stat(p)
	switch {
	case err == nil:
		if fi.Mode().IsRegular() {
			w.out = append(w.out, p)
		}
	case runs && os.IsNotExist(err) && withinAny(p, w.inside):
		w.out = append(w.out, p)
	}
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
