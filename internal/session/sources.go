package session

import (
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/tool"
)

// sourceAllowed says whether filesystem sources of a level (user, project, local) are read.
func (o SDKOptions) sourceAllowed(level string) bool {
	return !o.LimitSources || slices.Contains(o.SettingSources, level)
}

// fileScopes is the settings files' scopes --setting-sources allows; nil means all.
func (o SDKOptions) fileScopes() []settings.Scope {
	if !o.LimitSources {
		return nil
	}
	out := []settings.Scope{}
	for _, l := range o.SettingSources {
		out = append(out, settings.Scope(l))
	}
	return out
}

// memoryAllowed filters the memory files by the levels --setting-sources allows.
func (o SDKOptions) memoryAllowed(files []memory.File) []memory.File {
	if !o.LimitSources {
		return files
	}
	return slices.DeleteFunc(slices.Clone(files), func(f memory.File) bool {
		return f.Kind != memory.KindManaged && !o.sourceAllowed(string(f.Kind))
	})
}

// sdkFilter narrows the main thread's pool: to the built-in tools --tools names (MCP tools
// and tools the session adds stay), and without the tools a whole-tool deny rule forbids, so
// the model is never offered what it can never use.
func (s *Session) sdkFilter(p *tool.Pool) *tool.Pool {
	builtin := map[string]bool{}
	for _, t := range s.builtins {
		builtin[t.Name()] = true
	}
	denied := map[string]bool{}
	for _, r := range s.checker.Policy().Rules {
		if r.Behavior == permission.Deny && r.Specifier == "" && !strings.HasSuffix(r.Tool, "__*") {
			denied[r.Tool] = true
		}
	}
	limit := s.opts.SDK.LimitTools
	if !limit && len(denied) == 0 {
		return p
	}
	var keep []tool.Tool
	for _, t := range p.Tools() {
		name := t.Name()
		if denied[name] || (name == "Agent" && denied["Task"]) {
			continue
		}
		if limit && builtin[name] && name != structuredToolName && !slices.Contains(s.opts.SDK.BuiltinTools, name) &&
			!(name == "Agent" && slices.Contains(s.opts.SDK.BuiltinTools, "Task")) {
			continue
		}
		keep = append(keep, t)
	}
	return tool.Assemble(keep, nil)
}
