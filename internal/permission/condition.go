package permission

import (
	"encoding/json"
	"slices"
)

// Condition is a hook's `if` field: one rule in permission syntax ("Bash(git *)",
// "Edit(*.ts)", "mcp__github") that a tool call must match for the hook to run. It matches the
// way a deny rule does — any path the call touches, any sub-command of a command line,
// commands inside $() and wrappers, leading VAR=value assignments skipped — so a hook guarding
// `git push` sees `cd x && git push`.
type Condition struct {
	rule Rule
}

// ParseCondition parses the text of a hook's `if`.
func ParseCondition(text string) (Condition, error) {
	r, err := ParseRule(text, Deny, Source{Name: "hook"})
	if err != nil {
		return Condition{}, err
	}
	return Condition{rule: r}, nil
}

// String renders the condition as written.
func (c Condition) String() string { return c.rule.String() }

// Matches reports whether the call of tool with input, run in cwd, meets the condition; home
// anchors ~/ patterns (empty: no ~/ pattern matches). It fails open, as Claude Code's does:
// when a Bash pattern names more than the command and the command line holds what keel cannot
// read before it runs ($(), backticks, $VAR, a parse keel does not trust), the hook runs and
// decides for itself.
func (c Condition) Matches(tool string, input json.RawMessage, cwd, home string) bool {
	req := RequestFor(tool, false, input, cwd)
	r := c.rule
	if !r.toolMatches(canonicalTool(req.Tool), req.kind()) {
		return false
	}
	if r.Specifier == "" {
		return true
	}
	ck := &Checker{home: home}
	pol := Policy{Rules: []Rule{r}}
	if cwd != "" {
		pol.Dirs = []string{cwd}
	}
	p := ck.prepare(req, pol)
	if p.kind == KindShell && r.bash != nil && !r.bash.namesOnlyCommand() && undetermined(p.shell) {
		return true
	}
	return firstMatch(pol.Rules, Deny, p, cwd) != nil
}

// undetermined reports whether a command line holds what only running it decides: a
// substitution, a variable's value, or a construct keel's parser cannot vouch for. Leading
// assignments (FOO=1 git push) are not among them: the command they prefix is known.
func undetermined(a shellAnalysis) bool {
	if slices.ContainsFunc(a.uncheckedWhy, func(why string) bool { return why != "variable assignment" }) ||
		slices.Contains(a.opaque, "command substitution") || slices.Contains(a.opaque, "process substitution") {
		return true
	}
	return slices.ContainsFunc(a.cmds, func(c simpleCmd) bool {
		return slices.ContainsFunc(c.words, func(w shellWord) bool { return !w.static })
	})
}

// namesOnlyCommand reports whether the pattern names a program and nothing after it (git,
// git *, git:*): what a command runs is then known even when its arguments are not.
func (p *bashPattern) namesOnlyCommand() bool {
	switch p.form {
	case bashWildcard:
		return !p.wildHead && (len(p.named) == 1 || len(p.named) == 2 && p.named[1] == "*")
	default:
		return len(p.words) <= 1
	}
}
