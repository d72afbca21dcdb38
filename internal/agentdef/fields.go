package agentdef

import (
	"maps"
	"strings"
	"unicode"

	"github.com/keel-dev/keel/internal/frontmatter"
	"github.com/keel-dev/keel/internal/lazy"
)

// keelFields decodes keel's (and Claude Code's) frontmatter keys. The other formats start from
// a copy of it and replace what they spell differently.
var keelFields = lazy.Value[map[string]handler]{New: func() map[string]handler {
	return map[string]handler{
		"name":            {"name", setName},
		"description":     {"description", setDescription},
		"tools":           {"tools", setTools(keelToolName, false)},
		"allowedTools":    {"tools", setTools(keelToolName, false)},
		"allowed-tools":   {"tools", setTools(keelToolName, false)},
		"disallowedTools": {"disallowedTools", setDisallowed(keelToolName)},
		"model":           {"model", setModel},
		"permissionMode":  {"permissionMode", setPermissionMode},
		"maxTurns":        {"maxTurns", setMaxTurns},
		"effort":          {"effort", setEffort},
		"background":      {"background", setBackground},
		"initialPrompt":   {"initialPrompt", setInitialPrompt},
		"skills":          {"skills", setSkills},
		"memory":          {"memory", setMemory},
		"isolation":       {"isolation", setIsolation},
		"mcpServers":      {"mcpServers", setMCPServers},
		"hooks":           {"hooks", setHooks},
		"color":           {"color", func(d *decoder, f frontmatter.Field) { d.color(f) }},
		"omitMemory":      {"omitMemory", setOmitMemory},
	}
}}

// withFields returns keelFields with some keys replaced or added.
func withFields(over map[string]handler) map[string]handler {
	m := maps.Clone(keelFields.Get())
	maps.Copy(m, over)
	return m
}

func setName(d *decoder, f frontmatter.Field) {
	s, ok := d.str(f)
	if !ok {
		return
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		d.errorf(f.Line, "name %q contains a control character", s)
		return
	}
	d.def.Name = s
}

func setDescription(d *decoder, f frontmatter.Field) {
	if s, ok := d.str(f); ok {
		d.def.Description = s
	}
}

func setModel(d *decoder, f frontmatter.Field) {
	if s, ok := d.str(f); ok {
		d.def.Model = s
	}
}

func setPermissionMode(d *decoder, f frontmatter.Field) {
	if m, ok := enum(d, f, PermissionModes); ok {
		d.def.PermissionMode = m
	}
}

func setMaxTurns(d *decoder, f frontmatter.Field) {
	if n, ok := d.positive(f); ok {
		d.def.MaxTurns = n
	}
}

func setEffort(d *decoder, f frontmatter.Field) {
	if e, ok := d.effort(f); ok {
		d.def.Effort = e
	}
}

func setBackground(d *decoder, f frontmatter.Field) {
	if b, ok := d.flag(f); ok {
		d.def.Background = b
	}
}

func setOmitMemory(d *decoder, f frontmatter.Field) {
	if b, ok := d.flag(f); ok {
		d.def.OmitMemory = b
	}
}

func setInitialPrompt(d *decoder, f frontmatter.Field) {
	if s, ok := d.str(f); ok {
		d.def.InitialPrompt = s
	}
}

func setSkills(d *decoder, f frontmatter.Field) {
	if l, ok := d.stringList(f); ok {
		d.def.Skills = l
	}
}

func setMemory(d *decoder, f frontmatter.Field) {
	if m, ok := enum(d, f, MemoryScopes); ok {
		d.def.Memory = m
	}
}

func setIsolation(d *decoder, f frontmatter.Field) {
	if i, ok := enum(d, f, Isolations); ok {
		d.def.Isolation = i
	}
}

// setTools decodes an allow-list. With defaultOn (opencode's meaning of a map of booleans:
// every tool is on unless switched off) the true entries of a map restrict nothing.
func setTools(mapName func(string) (string, bool), defaultOn bool) func(*decoder, frontmatter.Field) {
	return func(d *decoder, f frontmatter.Field) {
		l, ok := d.toolList(f, mapName)
		if !ok || !l.set {
			return
		}
		if !l.isMap || (!defaultOn && len(l.allow) > 0) {
			d.def.Tools = l.allow
		}
		d.def.DisallowedTools = dedupe(append(d.def.DisallowedTools, l.deny...))
	}
}

func setDisallowed(mapName func(string) (string, bool)) func(*decoder, frontmatter.Field) {
	return func(d *decoder, f frontmatter.Field) {
		l, ok := d.toolList(f, mapName)
		if !ok || !l.set {
			return
		}
		// In a map form of a disallow-list a true entry is the one removed: l.allow.
		d.def.DisallowedTools = dedupe(append(d.def.DisallowedTools, l.allow...))
	}
}
