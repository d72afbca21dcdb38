package permission

import (
	"fmt"
	"strings"
)

// Mode is the session-wide stance that decides what happens to a tool call
// no rule settles. The string values are Claude Code's, because settings
// files and agent frontmatter written for it use them.
type Mode string

// The modes, from the most to the least restrictive except for bubble, which
// is about where asks go rather than what is allowed.
const (
	// ModeDefault allows read-only tools inside the working directories and
	// asks for edits and shell commands no allow rule covers.
	ModeDefault Mode = "default"
	// ModeAcceptEdits also allows edits inside the working directories.
	ModeAcceptEdits Mode = "acceptEdits"
	// ModePlan allows only read-only tools and the plan-exit tool.
	ModePlan Mode = "plan"
	// ModeDontAsk denies whatever would otherwise be asked.
	ModeDontAsk Mode = "dontAsk"
	// ModeBypassPermissions allows everything except what deny and ask rules
	// name.
	ModeBypassPermissions Mode = "bypassPermissions"
	// ModeBubble is for children without a terminal: decisions follow the
	// parent's mode (see [Intersect]) and asks go to the parent's [Asker].
	ModeBubble Mode = "bubble"
)

// Modes lists every valid mode in the order error messages show them.
var Modes = []Mode{ModeDefault, ModeAcceptEdits, ModePlan, ModeDontAsk, ModeBypassPermissions, ModeAuto, ModeBubble}

// ParseMode checks s against the valid modes. The empty string is
// [ModeDefault].
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeDefault, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("permission mode %q is not one of %s", s, strings.Join(names, ", "))
}

// effective is the mode whose semantics apply: bubble changes where asks
// go, not what is decided, so it decides like default.
func (m Mode) effective() Mode {
	if m == ModeBubble || m == ModeAuto || m == "" {
		// auto decides like default; its classifier then settles what default would ask.
		return ModeDefault
	}
	return m
}
