package cli

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/runconfig"
)

// listFlags are the flags Claude Code declares variadic (`--allowedTools <tools...>`): each
// takes every following argument up to the next one that starts with "-", so
// `keel -p "query" --allowedTools "Bash(git log:*)" "Read"` allows both rules and the prompt
// is "query". The values of one flag are kept apart (each may still hold several rules,
// comma- or space-separated) except --tools', which is one comma-separated list.
var listFlags = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"--allowedTools": true, "--allowed-tools": true,
		"--disallowedTools": true, "--disallowed-tools": true,
		"--add-dir": true, "--mcp-config": true, "--tools": true,
	}
}}

// expandListFlags rewrites the list flags of args as the repeated flags pflag reads:
// `--add-dir a b` becomes `--add-dir=a --add-dir=b`. It parses as commander (Claude Code's
// parser) does: the first value is taken whatever it looks like, the following ones until an
// argument that starts with "-" (a lone "-" is a value); `--flag=value` takes that one value
// only; "--" ends the flags, and everything after it is left as it is.
func expandListFlags(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if !listFlags.Get()[a] || i == len(args)-1 {
			out = append(out, a)
			continue
		}
		var values []string
		values = append(values, args[i+1])
		i++
		for i+1 < len(args) && !isOptionLike(args[i+1]) {
			values = append(values, args[i+1])
			i++
		}
		if a == "--tools" {
			values = []string{strings.Join(values, ",")}
		}
		for _, v := range values {
			out = append(out, a+"="+v)
		}
	}
	return out
}

// isOptionLike is commander's test of an argument that may be an option.
func isOptionLike(s string) bool { return len(s) > 1 && s[0] == '-' }

// hasListFlag says a list flag was given: a prompt placed after one is taken as its value.
func (f *runFlags) hasListFlag() bool {
	return len(f.allowedTools)+len(f.disallowedTools)+len(f.addDirs)+len(f.mcp.configs) > 0 || f.sdk.tools != ""
}

// warnStrayRules says on stderr which values of --allowedTools and --disallowedTools name no
// tool: a tool's name starts with a capital letter (Bash, Edit) or is an MCP tool's (mcp__…),
// so "fix the bug" there is most likely a prompt a list flag took. The run goes on, as Claude
// Code's does; the rule matches nothing.
func (a *app) warnStrayRules(f *runFlags) {
	for _, list := range []struct {
		flag   string
		values []string
	}{{"--allowedTools", f.allowedTools}, {"--disallowedTools", f.disallowedTools}} {
		for _, v := range list.values {
			for _, rule := range runconfig.SplitToolList([]string{v}) {
				if r := rule[0]; r >= 'a' && r <= 'z' && !strings.HasPrefix(rule, "mcp__") {
					fmt.Fprintf(a.std.Err, "keel: warning: %s %q names no tool (tools are Bash, Edit, mcp__server__tool…); "+
						"a list flag takes every argument up to the next flag, so put a prompt before it or after --\n", list.flag, v)
					break
				}
			}
		}
	}
}
