package permission

import (
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// Commands that run another command named in their arguments fall in three groups.
//
// Transparent wrappers change how a command runs but not what it is or who runs it: allow
// rules are matched against the wrapped command (Bash(git status:*) covers
// `timeout 5 git status`), provided keel can read the wrapper's options exactly. Deny and ask
// rules see the wrapped command too.
//
// Other wrappers (sudo, xargs, find -exec, parallel, chroot…) change the user, feed arguments
// from elsewhere or run the command many times: allow rules match them as themselves (a rule
// must name sudo to cover sudo), deny and ask rules see every command they may run.
//
// Shells and interpreters run code given as text: bash -c and eval strings are parsed for
// deny rules; code for python, node and the like cannot be, so in bypassPermissions a call
// to them is asked about when Bash deny or ask rules exist.

// wrapperSpec describes a transparent wrapper's options, enough to find where the wrapped
// command starts. GNU getopt for these commands stops at the first operand.
type wrapperSpec struct {
	shortFlags, shortArgs string   // single-letter options without and with an argument
	longFlags, longArgs   []string // --name and --name=value / --name value
	digitOption           bool     // -N is an option (nice -5)
	operands              int      // operands before the command (timeout's DURATION)
	assignments           bool     // NAME=VALUE words may come before the command (env)
	notRun                string   // options that make the wrapper print instead of run (command -v)
}

var transparentWrappers = lazy.Value[map[string]wrapperSpec]{New: func() map[string]wrapperSpec {
	return map[string]wrapperSpec{
		"command": {shortFlags: "p", notRun: "vV"},
		"builtin": {},
		"exec":    {shortFlags: "cl", shortArgs: "a"},
		"nice":    {shortArgs: "n", longArgs: []string{"adjustment"}, digitOption: true},
		"nohup":   {},
		"timeout": {shortFlags: "v", shortArgs: "ks", longFlags: []string{"preserve-status", "foreground", "verbose"},
			longArgs: []string{"kill-after", "signal"}, operands: 1},
		"stdbuf": {shortArgs: "ioe", longArgs: []string{"input", "output", "error"}},
		// env -C, -S, -P, -a and the signal options are not listed: they change the directory,
		// split a string into a command or the like, so env is then matched as itself.
		"env": {shortFlags: "i0v", shortArgs: "u", longFlags: []string{"ignore-environment", "null", "debug"},
			longArgs: []string{"unset"}, assignments: true},
		// GNU time's -o writes a file; only -p keeps it transparent.
		"time": {shortFlags: "p"},
	}
}}

// execWrappers run their arguments as a command after options of their own, and are matched
// as themselves by allow rules.
var execWrappers = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"sudo": true, "doas": true, "xargs": true, "chroot": true, "setsid": true, "flock": true,
		"watch": true, "parallel": true, "strace": true, "ltrace": true, "unbuffer": true,
		"caffeinate": true, "runuser": true, "chrt": true, "taskset": true, "script": true, "su": true,
		"busybox": true, "toybox": true, "ionice": true, "systemd-run": true, "nsenter": true, "unshare": true,
		"firejail": true, "proot": true, "fakeroot": true, "pkexec": true, "sg": true, "newgrp": true,
		"cgexec": true, "numactl": true, "catchsegv": true, "valgrind": true, "gdb": true, "dbus-launch": true,
		"ssh-agent": true, "torsocks": true, "proxychains": true, "proxychains4": true, "npx": true, "bunx": true,
		"pnpx": true, "uvx": true, "pipx": true, "nix-shell": true, "direnv": true, "with-contenv": true,
	}
}}

// shells take a command string with -c.
var shells = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true,
		"fish": true, "csh": true, "tcsh": true, "rbash": true, "yash": true, "posh": true,
	}
}}

// interpreters run code from their arguments (-c, -e, a script file, stdin), which keel
// cannot read.
var interpreters = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"python": true, "python2": true, "python3": true, "node": true, "perl": true, "ruby": true,
		"php": true, "lua": true, "deno": true, "bun": true, "awk": true, "gawk": true, "mawk": true,
		"nawk": true, "osascript": true, "powershell": true, "pwsh": true, "expect": true, "tclsh": true,
		"wish": true, "Rscript": true, "julia": true, "java": true, "jshell": true, "groovy": true,
		"scala": true, "ghci": true, "runghc": true, "erl": true, "elixir": true, "iex": true,
		"guile": true, "racket": true, "sbcl": true, "clojure": true, "make": true, "gmake": true,
	}
}}

// opaqueBuiltins run code from their arguments or change how later commands are looked up
// (eval, source, trap, alias, hash -p, enable -f, mapfile -C…): no allow rule covers them.
var opaqueBuiltins = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"eval": true, "source": true, ".": true, "trap": true, "alias": true, "unalias": true,
		"hash": true, "enable": true, "mapfile": true, "readarray": true, "jobs": true, "bind": true,
		"complete": true, "compgen": true, "fc": true, "shopt": true,
	}
}}

// subscriptBuiltins evaluate an array subscript in a variable-name argument, and so the
// arithmetic (and command substitutions) inside it: read 'a[$(cmd)]' runs cmd.
var subscriptBuiltins = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"read": "", "unset": "", "getopts": "", "wait": "", "printf": "-v", "test": "-v", "[": "-v",
	}
}}

// runsOtherCode reports whether a command with this name can run commands its arguments name
// or change how later commands run; a rule whose command name is a wildcard never covers it.
func runsOtherCode(name string) bool {
	base := baseName(name)
	_, transparent := transparentWrappers.Get()[base]
	return transparent || execWrappers.Get()[base] || shells.Get()[base] || interpreters.Get()[base] || opaqueBuiltins.Get()[base] ||
		base == "find"
}

func baseName(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }

// wrapped finds where a transparent wrapper's command starts. ok is false when the options
// cannot be read exactly; envChanged reports NAME=VALUE words (env), which change what the
// command does; i == len(words) means there is no command (command -v, a bare nice).
func wrapped(spec wrapperSpec, c simpleCmd) (i int, envChanged, ok bool) {
	i = 1
	for i < len(c.words) {
		w := c.words[i]
		if !w.static {
			return 0, false, false
		}
		v := w.value
		switch {
		case v == "--":
			i++
			goto operands
		case v == "-" && spec.assignments: // env - is env -i
			i++
		case strings.HasPrefix(v, "--"):
			name, _, hasValue := strings.Cut(v[2:], "=")
			switch {
			case slices.Contains(spec.longFlags, name) && !hasValue:
				i++
			case slices.Contains(spec.longArgs, name) && hasValue:
				i++
			case slices.Contains(spec.longArgs, name):
				i += 2
			default:
				return 0, false, false
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if spec.digitOption && isDigits(v[1:]) {
				i++
				continue
			}
			next := i + 1
			for j := 1; j < len(v); j++ {
				ch := v[j]
				switch {
				case strings.IndexByte(spec.notRun, ch) >= 0:
					return len(c.words), false, true
				case strings.IndexByte(spec.shortFlags, ch) >= 0:
					continue
				case strings.IndexByte(spec.shortArgs, ch) >= 0:
					if j+1 == len(v) {
						next = i + 2
					}
				default:
					return 0, false, false
				}
				break
			}
			i = next
		default:
			goto operands
		}
	}
operands:
	for range spec.operands {
		if i >= len(c.words) || !c.words[i].static {
			return 0, false, false
		}
		i++
	}
	for spec.assignments && i < len(c.words) && isAssignment(c.words[i]) {
		envChanged = true
		i++
	}
	if i > len(c.words) {
		return 0, false, false
	}
	return i, envChanged, true
}

func isAssignment(w shellWord) bool {
	if !w.static {
		return strings.Contains(w.value, "=")
	}
	name, _, ok := strings.Cut(w.value, "=")
	return ok && name != "" && !strings.HasPrefix(name, "-")
}

// allowView is the command allow rules must cover for c: with transparent wrappers removed
// (when their options read exactly and they change no environment) and git's harmless global
// options skipped, so `timeout 5 git --no-pager diff` is checked as `git diff`.
func (a *shellAnalysis) allowView(c simpleCmd) simpleCmd {
	for range maxWrapperDepth {
		a.checkBuiltin(c)
		spec, ok := transparentWrappers.Get()[c.name()]
		if !ok {
			break
		}
		i, envChanged, ok := wrapped(spec, c)
		if !ok || envChanged || i >= len(c.words) {
			break
		}
		inner := c.from(i)
		if name := inner.name(); !commandNameRE.Get().MatchString(name) {
			a.addBlind("command name %s is not a plain word", inner.words[0].value)
			return c
		}
		c = inner
	}
	if c.name() == "git" {
		c = skipGitOptions(c, harmlessGitFlags.Get(), false)
	}
	return c
}

// maxWrapperDepth bounds how many wrappers in a row are looked through (sudo nice timeout…).
const maxWrapperDepth = 8

// checkBuiltin marks builtins no allow rule may cover.
func (a *shellAnalysis) checkBuiltin(c simpleCmd) {
	name := c.name()
	if opaqueBuiltins.Get()[name] {
		if name == "eval" || name == "trap" {
			// Their strings are parsed for deny rules (addDeny).
			a.addOpaque("%s, which runs code the rules cannot see", name)
		} else {
			a.addBlind("%s, which runs code the rules cannot see", name)
		}
		return
	}
	opt, ok := subscriptBuiltins.Get()[name]
	if !ok {
		return
	}
	if opt != "" && !slices.ContainsFunc(c.words[1:], func(w shellWord) bool { return w.value == opt }) {
		return
	}
	if slices.ContainsFunc(c.words[1:], func(w shellWord) bool { return strings.Contains(w.value, "[") }) {
		a.addBlind("an array subscript given to %s, which bash evaluates", name)
	}
}
