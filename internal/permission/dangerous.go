package permission

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// A prefix rule allows its program's options (Bash(git diff:*) allows git diff --stat), but
// some options turn a program the user allowed for reading into one that runs commands or
// writes files: git grep -O runs a pager, sort -o writes, find -exec runs anything, sed's e
// command runs a shell. A command using one is not covered by a prefix or wildcard rule that
// does not name the option itself (Bash(sort -o:*) does): it is asked about. PERMISSIONS.md
// lists the table with a reason for each entry.

// dangerousOption is one entry: option names ("--output" matches --output and --output=x;
// "-o" matches -o, -ofile and a cluster holding o, or only the whole word where the
// program's options are words, as find's), and why.
type dangerousOption struct {
	names  []string
	reason string
}

// dangerSpec is a program's entry.
type dangerSpec struct {
	options []dangerousOption
	// wholeWords: the program's options are whole words (find -exec), never clusters.
	wholeWords bool
	// beforeOperand: only options before the first operand are the program's own (python
	// script.py -c x passes -c to the script).
	beforeOperand bool
	// check looks at the other words (a sed script, an awk program, make's VAR=value);
	// checkDoc says what it looks for, for PERMISSIONS.md.
	check    func(words []shellWord) string
	checkDoc string
}

func danger(reason string, names ...string) dangerousOption {
	return dangerousOption{names: names, reason: reason}
}

const (
	runsCode   = "runs a command or code it is given"
	writesFile = "writes a file it is given"
	otherRepo  = "points git at another repository or configuration, whose settings can run programs"
)

// dangerousTable is the table; gitDangerTable holds git's, by subcommand ("" for global
// options). Both are built on first use, so a keel that never checks a command (--version,
// a headless run in bypass mode) does not pay for them at start-up.
var (
	dangerous lazyTable[map[string]dangerSpec]
	gitDanger lazyTable[map[string][]dangerousOption]
)

func dangerousTable() map[string]dangerSpec        { return dangerous.get(buildDangerous) }
func gitDangerTable() map[string][]dangerousOption { return gitDanger.get(buildGitDanger) }

func buildDangerous() map[string]dangerSpec {
	return map[string]dangerSpec{
		"find": {wholeWords: true, options: []dangerousOption{
			danger(runsCode, "-exec", "-execdir", "-ok", "-okdir"),
			danger("deletes the files it finds", "-delete"),
			danger(writesFile, "-fprint", "-fprint0", "-fprintf", "-fls"),
		}},
		"sed": {options: []dangerousOption{
			danger("edits its files in place", "-i", "--in-place"),
			danger("reads its script from a file keel cannot check", "-f", "--file"),
		}, check: sedDanger, checkDoc: "a script with the `e` command or `s///e` (runs a shell command), `w`/`W` or `s///w` (writes a file), or one keel cannot read"},
		"awk": awkSpec, "gawk": awkSpec, "mawk": awkSpec, "nawk": awkSpec,
		"sort": {options: []dangerousOption{
			danger(writesFile, "-o", "--output"),
			danger(runsCode+" (a compressor)", "--compress-program"),
			danger("reads the names of the files to sort from a file", "--files0-from"),
		}},
		"tar": {options: []dangerousOption{
			danger(runsCode, "--checkpoint-action", "--to-command", "-I", "--use-compress-program", "--rsh-command",
				"-F", "--info-script", "--new-volume-script", "--rmt-command"),
			danger(writesFile, "--index-file"),
		}},
		"rg":    {options: []dangerousOption{danger(runsCode+" (a preprocessor for every file)", "--pre"), danger(runsCode, "--hostname-bin")}},
		"xargs": {options: []dangerousOption{danger("reads its arguments from a file", "-a", "--arg-file")}},
		"env": {options: []dangerousOption{
			danger("splits a string into a command keel cannot see", "-S", "--split-string"),
			danger("runs the command in another directory", "-C", "--chdir"),
		}, check: envDanger, checkDoc: "`NAME=value` for variables that make programs load or run code: `LD_*`, `DYLD_*`, `BASH_ENV`, `ENV`, `PATH`, `PYTHON*`, `NODE_OPTIONS`, `PERL5OPT`, `RUBYOPT`, `GIT_*`, `PAGER`, `EDITOR`, `LESSOPEN`…"},
		"less": lessSpec, "more": lessSpec, "most": lessSpec,
		"man": {options: []dangerousOption{
			danger(runsCode+" (a pager, browser or preprocessor)", "-P", "--pager", "-H", "--html", "-p", "--preprocessor"),
			danger("reads a configuration naming programs", "-C", "--config-file"),
		}},
		"zip": {options: []dangerousOption{danger(runsCode+" (the unzip command it tests with)", "-TT", "--unzip-command")}},
		"unzip": {options: []dangerousOption{
			danger("extracts into a directory it is given (.git/hooks…)", "-d"),
			danger("overwrites files without asking", "-o"),
		}},
		"rsync": {options: []dangerousOption{
			danger(runsCode+" (the remote shell)", "-e", "--rsh", "--rsync-path", "-M", "--remote-option"),
			danger(writesFile, "--log-file", "--write-batch", "--only-write-batch"),
		}},
		"ssh": {options: []dangerousOption{
			danger("sets options such as ProxyCommand and LocalCommand, which run commands", "-o"),
			danger("reads a configuration that can run commands", "-F"),
			danger(writesFile, "-E"),
		}},
		"scp":  {options: []dangerousOption{danger(runsCode+" (as its ssh)", "-S"), danger("sets ssh options such as ProxyCommand", "-o", "-F")}},
		"sftp": {options: []dangerousOption{danger(runsCode+" (as its ssh or server)", "-S", "-D"), danger("sets ssh options such as ProxyCommand", "-o", "-F")}},
		"make": makeSpec, "gmake": makeSpec,
		"npm": npmSpec, "yarn": npmSpec, "pnpm": npmSpec,
		"curl": {options: []dangerousOption{
			danger(writesFile, "-o", "-O", "--output", "--remote-name", "--remote-name-all", "-D", "--dump-header",
				"-c", "--cookie-jar", "--trace", "--trace-ascii", "--libcurl", "--output-dir"),
			danger("reads a configuration that can name files to write or send", "-K", "--config"),
		}},
		"wget": {options: []dangerousOption{
			danger(writesFile, "-O", "-o", "-a", "-P", "--output-document", "--output-file", "--append-output", "--directory-prefix"),
			danger(runsCode+" (wgetrc commands, an askpass program)", "-e", "--execute", "--config", "--use-askpass"),
		}},
		"python": pythonSpec, "python2": pythonSpec, "python3": pythonSpec,
		"node": {beforeOperand: true, options: []dangerousOption{
			danger(runsCode, "-e", "--eval", "-p", "--print", "-r", "--require", "--import", "--loader", "--experimental-loader"),
		}},
		"perl": {beforeOperand: true, options: []dangerousOption{
			danger(runsCode, "-e", "-E", "-M", "-x"), danger("edits its files in place", "-i"),
		}},
		"ruby": {beforeOperand: true, options: []dangerousOption{
			danger(runsCode, "-e", "-r", "-x"), danger("edits its files in place", "-i"),
		}},
		"php": {beforeOperand: true, options: []dangerousOption{danger(runsCode, "-r", "-B", "-E", "-R", "-F")}},
		"lua": {beforeOperand: true, options: []dangerousOption{danger(runsCode, "-e", "-l")}},
	}
}

var (
	awkSpec = dangerSpec{options: []dangerousOption{
		danger("runs a program from a file keel cannot check", "-f", "--file", "-i", "--include", "-E", "--exec"),
		danger("loads a shared library", "-l", "--load"),
	}, check: awkDanger, checkDoc: "a program using `system`, `|`, `>`, `getline`, `close`, `fflush`, `ENVIRON`, `PROCINFO`, `@load`, `@include` (runs commands, reads or writes files), or one that is computed"}
	lessSpec = dangerSpec{options: []dangerousOption{
		danger(writesFile+" (a log of its input)", "-o", "-O", "--log-file", "--LOG-FILE"),
		danger("reads key bindings that can run commands", "-k", "--lesskey-file", "--lesskey-src"),
		danger("runs initial commands (+!cmd runs a shell)", "+"),
	}}
	makeSpec = dangerSpec{options: []dangerousOption{
		danger("reads another makefile, whose recipes run", "-f", "--file", "--makefile", "-C", "--directory", "-I", "--include-dir"),
		danger(runsCode, "--eval", "-E"),
		danger("lets the environment override the makefile's variables (SHELL, CC…)", "-e", "--environment-overrides"),
	}, check: func(words []shellWord) string {
		for _, w := range words {
			if assignmentLikeRE.Get().MatchString(w.value) {
				return fmt.Sprintf("%s overrides a make variable, which can change every command the recipes run", w.value)
			}
		}
		return ""
	}, checkDoc: "`VAR=value` arguments: they override the makefile's variables (`SHELL`, `CC`…), which the recipes run"}
	npmSpec = dangerSpec{options: []dangerousOption{
		danger(runsCode+" (the shell for package scripts)", "--script-shell"),
		danger(runsCode, "-c", "--call", "--node-options"),
		danger("runs another package's scripts", "--prefix", "-C", "--dir", "--cwd"),
		danger("reads a configuration that can set the script shell", "--userconfig", "--globalconfig"),
	}}
	pythonSpec = dangerSpec{beforeOperand: true, options: []dangerousOption{danger(runsCode, "-c", "-m")}}
)

// buildGitDanger is git's table: global options (key "") and options of every subcommand
// ("*"), then by subcommand.
func buildGitDanger() map[string][]dangerousOption {
	return map[string][]dangerousOption{
		"": {
			danger("sets configuration such as core.pager, core.fsmonitor or an alias, which run programs", "-c", "--config-env"),
			danger(runsCode+" (git's own commands from a directory it is given)", "--exec-path="),
			danger(otherRepo, "-C", "--git-dir", "--work-tree"),
			danger(runsCode+" (the pager)", "-p", "--paginate"),
		},
		"*": {
			danger(runsCode+" (on the remote side, or as the transport)", "--upload-pack", "--receive-pack", "--exec"),
			danger(runsCode+" (an external diff or textconv filter)", "--ext-diff", "--textconv"),
			danger(writesFile, "--output", "--output-directory"),
			danger(runsCode+" (hooks from a template directory)", "--template"),
			danger(otherRepo, "--separate-git-dir"),
			danger("reads paths from a file", "--pathspec-from-file"),
		},
		"grep":         {danger(runsCode+" (a pager on the matching files)", "-O", "--open-files-in-pager")},
		"clone":        {danger(runsCode+" (as upload-pack)", "-u"), danger("sets configuration for the new repository", "-c", "--config")},
		"fetch":        {danger(runsCode+" (as upload-pack)", "-u")},
		"pull":         {danger(runsCode+" (as upload-pack)", "-u")},
		"ls-remote":    {danger(runsCode+" (as upload-pack)", "-u")},
		"archive":      {danger(writesFile, "-o"), danger(runsCode+" (on the remote side)", "--remote")},
		"format-patch": {danger(writesFile, "-o")},
		"rebase":       {danger(runsCode, "-x", "--exec")},
		"difftool":     {danger(runsCode, "-x", "--extcmd", "-t", "--tool")},
		"mergetool":    {danger(runsCode, "-t", "--tool")},
		"submodule":    {danger(runsCode+" (in every submodule)", "foreach")},
		"bisect":       {danger(runsCode+" (at every step)", "run")},
		"config":       {},
		"worktree":     {},
	}
}

// dangerousIn returns why command c uses an option the allow rule p does not name that makes
// it run code or write files, or "".
func (p *bashPattern) dangerousIn(c simpleCmd) string {
	if p.form == bashExact || len(c.words) == 0 {
		return ""
	}
	named := p.words
	if p.form == bashWildcard {
		named = p.named
	}
	prog := baseName(c.name())
	if prog == "git" {
		return gitDangerIn(c, named)
	}
	spec, ok := dangerousTable()[prog]
	if !ok {
		return ""
	}
	words := c.words[1:]
	if spec.beforeOperand {
		if i := slices.IndexFunc(words, func(w shellWord) bool { return !strings.HasPrefix(w.value, "-") }); i >= 0 {
			words = words[:i]
		}
	}
	if why := optionDanger(prog, words, spec.options, spec.wholeWords, named); why != "" {
		return why
	}
	if spec.check != nil {
		return spec.check(words)
	}
	return ""
}

func optionDanger(prog string, words []shellWord, opts []dangerousOption, wholeWords bool, named []string) string {
	for _, w := range words {
		v := w.value
		if v == "--" {
			return ""
		}
		if strings.HasPrefix(prog, "git") && strings.Contains(v, "ext::") {
			return fmt.Sprintf("%s is a git transport that runs a command", v)
		}
		for _, o := range opts {
			for _, name := range o.names {
				if !optionMatches(v, name, wholeWords) || ruleNames(named, name) {
					continue
				}
				return fmt.Sprintf("%s %s %s, and the rule does not name %s", prog, v, o.reason, name)
			}
		}
	}
	return ""
}

// optionMatches reports whether word v uses option name: "+" any word starting with "+";
// "--exec-path=" a word starting so; "--long" alone or with "=value"; in wholeWords
// programs (find) the word itself; a longer single-dash name ("-TT") alone or with its value
// glued; "-o" alone, glued or in a cluster; a plain name (git submodule foreach) the word.
func optionMatches(v, name string, wholeWords bool) bool {
	switch {
	case name == "+":
		return strings.HasPrefix(v, "+")
	case strings.HasSuffix(name, "="):
		return strings.HasPrefix(v, name)
	case strings.HasPrefix(name, "--"):
		return v == name || strings.HasPrefix(v, name+"=")
	case wholeWords:
		return v == name
	case strings.HasPrefix(name, "-") && len(name) > 2:
		return strings.HasPrefix(v, name)
	case strings.HasPrefix(name, "-"):
		return len(v) >= 2 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v[1:], name[1]) >= 0
	}
	return v == name
}

// ruleNames reports whether the rule's own words name the option.
func ruleNames(named []string, name string) bool {
	name = strings.TrimSuffix(name, "=")
	return slices.ContainsFunc(named, func(w string) bool { return w == name || strings.HasPrefix(w, name) })
}

func gitDangerIn(c simpleCmd, named []string) string {
	s := skipGitOptions(c, gitFlags.Get(), true)
	global := c.words[1 : len(c.words)-len(s.words)+1]
	if why := optionDanger("git", global, gitDangerTable()[""], false, named); why != "" {
		return why
	}
	if len(s.words) < 2 {
		return ""
	}
	sub := s.words[1].value
	rest := s.words[2:]
	opts := slices.Concat(gitDangerTable()["*"], gitDangerTable()[sub])
	if why := optionDanger("git "+sub, rest, opts, false, named); why != "" {
		return why
	}
	if sub == "config" && slices.ContainsFunc(rest, func(w shellWord) bool { return !strings.HasPrefix(w.value, "-") }) &&
		len(operandIndexes(simpleCmd{words: s.words[1:]}, "f")) >= 2 && !ruleNames(named, rest[len(rest)-1].value) {
		return "git config sets a value, and settings such as core.pager, core.hooksPath or an alias run programs"
	}
	return ""
}

// sedDanger finds e, w, W commands (and the e and w flags of s) in sed's scripts.
func sedDanger(words []shellWord) string {
	if slices.ContainsFunc(words, func(w shellWord) bool { return w.value == "--sandbox" }) {
		return ""
	}
	scripts, explicit := []string{}, false
	for i := 0; i < len(words); i++ {
		v := words[i].value
		switch {
		case v == "-e" || v == "--expression":
			explicit = true
			if i+1 < len(words) {
				scripts = append(scripts, words[i+1].value)
				i++
			}
		case strings.HasPrefix(v, "--expression="):
			explicit = true
			scripts = append(scripts, strings.TrimPrefix(v, "--expression="))
		case strings.HasPrefix(v, "-e") && len(v) > 2:
			explicit = true
			scripts = append(scripts, v[2:])
		}
	}
	if !explicit {
		if ops := operandIndexes(simpleCmd{words: append([]shellWord{{}}, words...)}, "efl"); len(ops) > 0 {
			w := words[ops[0]-1]
			if !w.static {
				return "sed's script is computed, so keel cannot check it for commands that run or write"
			}
			scripts = append(scripts, w.value)
		}
	}
	for _, s := range scripts {
		sc, ok := parseSed(s)
		switch {
		case !ok:
			return fmt.Sprintf("keel cannot read the sed script %q, which could run commands (e) or write files (w)", s)
		case sc.exec:
			return fmt.Sprintf("the sed script %q runs a shell command (e)", s)
		case len(sc.writes) > 0:
			return fmt.Sprintf("the sed script %q writes %s (w)", s, sc.writes[0])
		}
	}
	return ""
}

// awkProgramRE finds what makes an awk program run commands or write files: system(), pipes,
// output redirection, getline from a command or file.
var awkProgramRE = lazy.Regexp{Expr: `system|\||>|getline|close|fflush|ENVIRON|PROCINFO|@load|@include`}

func awkDanger(words []shellWord) string {
	ops := operandIndexes(simpleCmd{words: append([]shellWord{{}}, words...)}, "vF")
	if len(ops) == 0 {
		return ""
	}
	w := words[ops[0]-1]
	if !w.static {
		return "the awk program is computed, so keel cannot check it"
	}
	if m := awkProgramRE.Get().FindString(w.value); m != "" {
		return fmt.Sprintf("the awk program uses %s, which can run commands or write files", m)
	}
	return ""
}

// codeVarsRE are environment variables that make programs load or run code.
var codeVarsRE = lazy.Regexp{Expr: `^(LD_[A-Z_]+|DYLD_[A-Z_]+|BASH_ENV|ENV|PATH|PYTHON[A-Z]*|NODE_OPTIONS|NODE_PATH|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|GIT_[A-Z_]+|PAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|IFS)=`}

func envDanger(words []shellWord) string {
	for _, w := range words {
		if codeVarsRE.Get().MatchString(w.value) {
			return fmt.Sprintf("env sets %s, which can make the command load or run other code", w.value)
		}
	}
	return ""
}
