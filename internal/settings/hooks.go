package settings

import "fmt"

// HookGroup is one matcher entry of the hooks key, in Claude Code's shape:
// {"hooks":{"PreToolUse":[{"matcher":"Bash|Edit","hooks":[{"type":"command","command":"…"}]}]}}.
// Event names are not checked here; the hooks package knows which events exist.
type HookGroup struct {
	Event   string
	Matcher string
	Hooks   []HookCommand
	From    Origin
}

// HookCommand is one hook of a group.
type HookCommand struct {
	Type    string `json:"type"`
	Command string `json:"command,omitempty"`
	// Timeout is in seconds, as in Claude Code; 0 means the runner's default.
	Timeout       float64 `json:"timeout,omitempty"`
	Async         bool    `json:"async,omitempty"`
	Once          bool    `json:"once,omitempty"`
	StatusMessage string  `json:"statusMessage,omitempty"`
	// If is a permission rule ("Bash(git *)") a tool call must match for the hook to run;
	// on events that are not about a tool call, a hook with If never runs (Claude Code's
	// conditional hooks).
	If   string `json:"if,omitempty"`
	From Origin `json:"-"`
	// Env is added to the hook's environment ("KEY=value"): a plugin's hooks get its
	// CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA. Settings files cannot set it.
	Env []string `json:"-"`
}

// longTimeout is where a timeout in seconds looks like it was written in milliseconds.
const longTimeout = 1000

func hooksKey() keyDef {
	return keyDef{
		name: "hooks",
		apply: func(s *Settings, f *fileCtx, key string, n *node) {
			if n.kind != kindObject {
				wrongType(f, key, n, `an object of events, {"PreToolUse":[{"matcher":"…","hooks":[…]}]}`)
				return
			}
			for _, ev := range n.members {
				evKey := key + "." + ev.key
				if ev.val.kind != kindArray {
					if ev.val.kind == kindObject {
						f.errorf(ev.off, `%s is an object, not a list of matcher groups: this looks like an obsolete hooks shape; want {"hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"…"}]}]}} (ignored)`, evKey)
					} else {
						wrongType(f, evKey, ev.val, "an array of matcher groups")
					}
					continue
				}
				for i, g := range ev.val.elems {
					if grp, ok := decHookGroup(f, fmt.Sprintf("%s[%d]", evKey, i), ev.key, g); ok {
						s.Hooks = append(s.Hooks, grp)
					}
				}
			}
		},
		show: func(s *Settings, key string) []shown {
			var out []shown
			for _, g := range s.Hooks {
				out = append(out, shown{key: key + "." + g.Event, list: true,
					value: map[string]any{"matcher": g.Matcher, "hooks": g.Hooks}, from: g.From})
			}
			return out
		},
	}
}

func decHookGroup(f *fileCtx, key, event string, n *node) (HookGroup, bool) {
	g := HookGroup{Event: event, From: f.origin(n)}
	if n.kind != kindObject {
		wrongType(f, key, n, `an object {"matcher":"…","hooks":[…]}`)
		return g, false
	}
	var hooks *node
	for _, m := range n.members {
		switch m.key {
		case "matcher":
			if m.val.kind == kindNull {
				continue
			}
			v, ok := decString(f, key+".matcher", m.val)
			if !ok {
				return g, false
			}
			g.Matcher = v
		case "hooks":
			hooks = m.val
		default:
			f.warnf(m.off, "unknown key %s.%s in a hook matcher group (ignored)", key, m.key)
		}
	}
	if hooks == nil {
		f.errorf(n.off, "%s has no hooks list (ignored)", key)
		return g, false
	}
	if hooks.kind != kindArray {
		wrongType(f, key+".hooks", hooks, "an array of hooks")
		return g, false
	}
	for i, h := range hooks.elems {
		if c, ok := decHookCommand(f, fmt.Sprintf("%s.hooks[%d]", key, i), h); ok {
			g.Hooks = append(g.Hooks, c)
		}
	}
	return g, len(g.Hooks) > 0
}

func decHookCommand(f *fileCtx, key string, n *node) (HookCommand, bool) {
	c := HookCommand{From: f.origin(n)}
	if n.kind != kindObject {
		wrongType(f, key, n, `an object {"type":"command","command":"…"}`)
		return c, false
	}
	ok := true
	for _, m := range n.members {
		mk := key + "." + m.key
		var good bool
		switch m.key {
		case "type":
			c.Type, good = decNonEmpty(f, mk, m.val)
		case "command":
			c.Command, good = decNonEmpty(f, mk, m.val)
		case "timeout":
			c.Timeout, good = decNumberIn(0.001, 1e9, "a number of seconds")(f, mk, m.val)
			if good && c.Timeout >= longTimeout {
				f.warnf(m.val.off, "%s %v is in seconds (%.0f minutes); Claude Code reads it as seconds too, so keel does, but it looks like milliseconds", mk, c.Timeout, c.Timeout/60)
			}
		case "async":
			c.Async, good = decBool(f, mk, m.val)
		case "once":
			c.Once, good = decBool(f, mk, m.val)
		case "statusMessage":
			c.StatusMessage, good = decString(f, mk, m.val)
		case "if":
			c.If, good = decNonEmpty(f, mk, m.val)
		default:
			f.warnf(m.off, "unknown key %s in a hook (ignored)", mk)
			good = true
		}
		ok = ok && good
	}
	if ok && c.Type == "" {
		f.errorf(n.off, "%s has no type (want \"command\")", key)
		ok = false
	}
	if ok && c.Type == "command" && c.Command == "" {
		f.errorf(n.off, "%s has no command", key)
		ok = false
	}
	return c, ok
}
