package permission

import (
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// maxDenyWords caps the words of all the spellings collected for one line (a wrapper's every
// tail is one); past it the line is asked about instead of growing without bound.
const maxDenyWords = 1 << 17

// addDeny records c, and every command c runs, in every spelling a deny or ask rule may name
// it. Reading too much is safe here: these views only ever make a call stricter. What keel
// cannot follow (nesting past maxShellDepth, more than maxDenyWords) makes the line blind,
// and so asked about.
func (a *shellAnalysis) addDeny(c simpleCmd, depth int) {
	if a.denyWords += len(c.words); a.denyWords > maxDenyWords {
		if !a.overBudget {
			a.overBudget = true
			a.addBlind("more commands than keel checks in one line")
		}
		return
	}
	if g, changed := c.guessed(); changed {
		c = g
	}
	sp := spellings(c)
	for _, v := range sp[1:] {
		a.denyWords += len(v.words)
	}
	a.deny = append(a.deny, sp...)
	if len(c.words) == 0 || !c.words[0].static {
		return
	}
	base := baseName(c.name())
	if depth >= maxShellDepth {
		if _, ok := transparentWrappers.Get()[base]; ok || execWrappers.Get()[base] || shells.Get()[base] || base == "eval" || base == "find" || base == "trap" {
			a.addBlind("commands nested deeper than %d levels", maxShellDepth)
		}
		return
	}
	spec, transparent := transparentWrappers.Get()[base]
	switch {
	case transparent:
		if i, _, ok := wrapped(spec, c); ok {
			if i < len(c.words) {
				a.addDeny(c.from(i), depth+1)
			}
			return
		}
		a.denyEveryTail(c, depth)
	case base == "find":
		a.denyFindExec(c, depth)
	case shells.Get()[base]:
		a.denyShell(c, depth)
	case base == "eval":
		a.denyScript(joinWords(c.words[1:]), depth)
	case base == "trap" && len(c.words) > 1:
		a.denyScript(c.words[1].value, depth)
	case execWrappers.Get()[base]:
		a.denyEveryTail(c, depth)
	case interpreters.Get()[base] || base == "source" || base == ".":
		a.unchecked("%s runs code keel cannot read", base)
	}
}

func joinWords(ws []shellWord) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.value
	}
	return strings.Join(parts, " ")
}

// spellings are the ways a deny rule may name c: as written, by the base name of its
// program (/usr/bin/rm, ./rm and \rm are rm), and, for git, with its global options skipped
// (git -C . push is git push).
func spellings(c simpleCmd) []simpleCmd {
	out := []simpleCmd{c}
	name := c.name()
	if name == "" {
		return out
	}
	if base := baseName(name); base != name && base != "" {
		bc := simpleCmd{words: append([]shellWord{{value: base, static: true}}, c.words[1:]...)}
		out = append(out, bc)
		c = bc
	}
	if c.name() == "git" {
		out = append(out, gitSubcommands(c)...)
	}
	return out
}

// git's global options: those that take a value (as the next word or after "="), and flags.
var (
	gitValueOptions = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return map[string]bool{
			"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
			"--config-env": true, "--super-prefix": true, "--attr-source": true, "--list-cmds": true,
		}
	}}
	gitFlags = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return map[string]bool{
			"-p": true, "-P": true, "--paginate": true, "--no-pager": true, "--bare": true,
			"--no-replace-objects": true, "--no-lazy-fetch": true, "--no-optional-locks": true,
			"--no-advice": true, "--literal-pathspecs": true, "--glob-pathspecs": true,
			"--noglob-pathspecs": true, "--icase-pathspecs": true, "--exec-path": true,
			"--html-path": true, "--man-path": true, "--info-path": true,
		}
	}}
	// harmlessGitFlags change nothing about what a subcommand may do, so allow rules look
	// past them (git --no-pager log is git log). -c, -C, --git-dir, --exec-path and the
	// like can make git run other programs, and keep the command matched as written.
	harmlessGitFlags = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return map[string]bool{
			"--no-pager": true, "-P": true, "--no-optional-locks": true, "--no-advice": true,
			"--literal-pathspecs": true, "--glob-pathspecs": true, "--noglob-pathspecs": true,
			"--icase-pathspecs": true, "--no-replace-objects": true, "--no-lazy-fetch": true,
		}
	}}
)

// skipGitOptions drops the leading global options of a git command: the flags given, and
// with values set the options that take a value too. It stops at the first other word.
func skipGitOptions(c simpleCmd, flags map[string]bool, values bool) simpleCmd {
	i := 1
	for ; i < len(c.words) && c.words[i].static; i++ {
		v := c.words[i].value
		name, _, hasValue := strings.Cut(v, "=")
		switch {
		case flags[v]:
		case !values:
			return trimGit(c, i)
		case gitValueOptions.Get()[v]:
			i++ // the value is the next word
		case hasValue && strings.HasPrefix(v, "--") && (gitValueOptions.Get()[name] || name == "--exec-path"):
		case len(v) > 2 && (strings.HasPrefix(v, "-C") || strings.HasPrefix(v, "-c")) && v[1] != '-':
		default:
			return trimGit(c, i)
		}
	}
	return trimGit(c, i)
}

func trimGit(c simpleCmd, i int) simpleCmd {
	if i == 1 || i > len(c.words) {
		return c
	}
	return simpleCmd{words: append([]shellWord{c.words[0]}, c.words[i:]...)}
}

// gitSubcommands returns c with git's global options skipped. After an option keel does not
// know, every later word may be the subcommand, so each is tried.
func gitSubcommands(c simpleCmd) []simpleCmd {
	s := skipGitOptions(c, gitFlags.Get(), true)
	var out []simpleCmd
	if len(s.words) != len(c.words) {
		out = append(out, s)
	}
	// git itself stops at an unknown global option, so a few words suffice.
	if len(s.words) > 1 && s.words[1].static && strings.HasPrefix(s.words[1].value, "-") {
		for j := 2; j < min(len(s.words), 18); j++ {
			if s.words[j].static && !strings.HasPrefix(s.words[j].value, "-") {
				out = append(out, simpleCmd{words: append([]shellWord{c.words[0]}, s.words[j:]...)})
			}
		}
	}
	return out
}

// denyEveryTail is for wrappers whose options keel cannot read exactly: any later plain word
// may start the wrapped command, and any word that looks like a script (sudo sh -c '…',
// watch 'rm x', su -c '…') may be one.
func (a *shellAnalysis) denyEveryTail(c simpleCmd, depth int) {
	for i := 1; i < len(c.words); i++ {
		w := c.words[i]
		if !w.static {
			continue
		}
		if !strings.HasPrefix(w.value, "-") && !strings.Contains(w.value, "=") {
			a.addDeny(c.from(i), depth+1)
		}
		if strings.ContainsAny(w.value, " \t\n;&|") {
			a.denyScript(w.value, depth)
		}
	}
}

// denyFindExec sees the commands of find's -exec, -execdir, -ok and -okdir actions.
func (a *shellAnalysis) denyFindExec(c simpleCmd, depth int) {
	for i := 1; i < len(c.words); i++ {
		switch c.words[i].value {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		end := i + 1
		for end < len(c.words) && c.words[end].value != ";" && c.words[end].value != "+" {
			end++
		}
		if end > i+1 {
			a.addDeny(simpleCmd{words: c.words[i+1 : end]}, depth+1)
		}
		i = end
	}
}

// denyShell parses the script of sh -c and the like; a shell given no script reads one from
// stdin or a file, which keel cannot see.
func (a *shellAnalysis) denyShell(c simpleCmd, depth int) {
	for i := 1; i < len(c.words); i++ {
		w := c.words[i].value
		if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "c") {
			if i+1 < len(c.words) {
				a.denyScript(c.words[i+1].value, depth)
				return
			}
		}
	}
	a.unchecked("%s reads a script keel cannot see", c.name())
}

// denyScript records the commands of a shell script given as text.
func (a *shellAnalysis) denyScript(script string, depth int) {
	if depth+1 > maxShellDepth {
		a.addBlind("commands nested deeper than %d levels", maxShellDepth)
		return
	}
	inner := analyzeShellDepth(script, depth+1, a.files)
	for _, v := range inner.deny {
		if a.denyWords += len(v.words); a.denyWords > maxDenyWords {
			if !a.overBudget {
				a.overBudget = true
				a.addBlind("more commands than keel checks in one line")
			}
			return
		}
		a.deny = append(a.deny, v)
	}
	a.uncheckedWhy = append(a.uncheckedWhy, inner.uncheckedWhy...)
	a.uses.args = append(a.uses.args, inner.uses.args...)
	a.reads = append(a.reads, inner.reads...)
	a.writes = append(a.writes, inner.writes...)
	for _, why := range inner.uses.unknowns {
		a.uses.unknown(why)
	}
}
