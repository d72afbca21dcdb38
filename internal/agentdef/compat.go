package agentdef

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/frontmatter"
	"github.com/keel-dev/keel/internal/lazy"
)

// Gemini CLI subagents (.gemini/agents/*.md) are markdown with frontmatter like keel's, but
// name their tools after Gemini's built-ins and carry model sampling settings.
var geminiFields = lazy.Value[map[string]handler]{New: func() map[string]handler {
	return withFields(map[string]handler{
		"tools":        {"tools", setTools(geminiToolName, false)},
		"max_turns":    {"maxTurns", setMaxTurns},
		"kind":         {"kind", setGeminiKind},
		"temperature":  {"temperature", unsupportedBy("gemini")},
		"top_p":        {"top_p", unsupportedBy("gemini")},
		"timeout_mins": {"timeout_mins", unsupportedBy("gemini")},
	})
}}

func parseGemini(path string, data []byte) (*Definition, []Diagnostic) {
	return parseMarkdown(path, data, FormatGemini, geminiFields.Get(), "")
}

func setGeminiKind(d *decoder, f frontmatter.Field) {
	s, _ := scalar(f.Value)
	if strings.TrimSpace(s) != "local" {
		d.errorf(f.Line, "kind %s is not supported; only local agents are", quoted(f.Value))
		return
	}
	d.extra(f)
}

func unsupportedBy(harness string) func(*decoder, frontmatter.Field) {
	return func(d *decoder, f frontmatter.Field) { d.unsupported(f, harness) }
}

// opencode agents (.opencode/agent/**/*.md) take their identity from the file path; their
// "name" is a display name. tools is a map of booleans over tools that are on by default, and
// permission(s) maps a tool to an action or to patterns with actions.
var opencodeFields = lazy.Value[map[string]handler]{New: func() map[string]handler {
	return withFields(map[string]handler{
		"name":        {"displayName", func(d *decoder, f frontmatter.Field) { d.extra(f) }},
		"tools":       {"tools", setTools(opencodeToolName, true)},
		"permission":  {"permissions", setOpencodePermissions},
		"permissions": {"permissions", setOpencodePermissions},
		"mode":        {"mode", setOpencodeMode},
		"maxSteps":    {"maxTurns", setMaxTurns},
		"steps":       {"maxTurns", setMaxTurns},
		"temperature": {"temperature", unsupportedBy("opencode")},
		"top_p":       {"top_p", unsupportedBy("opencode")},
		"prompt":      {"prompt", unsupportedBy("opencode")},
		"disable":     {"disable", unsupportedBy("opencode")},
	})
}}

// opencodeName is an opencode agent's identity: its path below the agent folder, without the
// extension, with forward slashes.
func opencodeName(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		rel = filepath.Base(path)
	}
	return filepath.ToSlash(strings.TrimSuffix(rel, filepath.Ext(rel)))
}

func parseOpencode(path string, data []byte, name string) (*Definition, []Diagnostic) {
	return parseMarkdown(path, data, FormatOpencode, opencodeFields.Get(), name)
}

func setOpencodeMode(d *decoder, f frontmatter.Field) {
	s, _ := scalar(f.Value)
	switch strings.TrimSpace(s) {
	case "subagent", "all":
	case "primary":
		d.warnf(f.Line, "opencode mode \"primary\" (a main-thread agent) has no keel equivalent; it is offered as a subagent")
	default:
		d.errorf(f.Line, "mode %s is not one of primary, subagent, all", quoted(f.Value))
		return
	}
	d.extra(f)
}

// opencodeActions maps opencode permission actions to keel's rule lists.
var opencodeActions = []string{"allow", "ask", "deny"}

// setOpencodePermissions turns opencode's permission map into keel rules: "tool: deny" becomes
// the rule "Tool" in Deny, "tool: {pattern: ask}" the rule "Tool(pattern)" in Ask, and a "*"
// pattern the whole-tool rule. keel's deny wins over allow, so opencode's "deny everything but
// these patterns" cannot be written exactly: the patterns are kept as allow rules, the
// catch-all deny is left to the permission mode, and a warning says so.
func setOpencodePermissions(d *decoder, f frontmatter.Field) {
	perms, ok := f.Value.(map[string]any)
	if !ok {
		if f.Value != nil {
			d.errorf(f.Line, "%s must be a map of tool to action, got %s", f.Key, kind(f.Value))
		}
		return
	}
	rules := &Rules{}
	var unmapped []string
	for _, tool := range sortedKeys(perms) {
		name, ok := opencodeToolName(tool)
		if !ok {
			unmapped = append(unmapped, tool)
			continue
		}
		switch v := perms[tool].(type) {
		case string:
			if !rules.add(v, name) {
				d.errorf(f.Line, "%s.%s: action %q is not one of %s", f.Key, tool, v, strings.Join(opencodeActions, ", "))
				return
			}
		case map[string]any:
			catchAll, _ := v["*"].(string)
			hasAllow := false
			for _, pat := range sortedKeys(v) {
				action, _ := v[pat].(string)
				rule := fmt.Sprintf("%s(%s)", name, pat)
				if pat == "*" {
					rule = name
				}
				if action == "allow" {
					hasAllow = true
				}
				if pat == "*" && catchAll == "deny" && len(v) > 1 {
					continue // decided below, once the other patterns are known
				}
				if !rules.add(action, rule) {
					d.errorf(f.Line, "%s.%s: action %s for %q is not one of %s", f.Key, tool, quoted(v[pat]), pat, strings.Join(opencodeActions, ", "))
					return
				}
			}
			if catchAll == "deny" && len(v) > 1 {
				if hasAllow {
					d.warnf(f.Line, "%s.%s: \"deny all but the allowed patterns\" has no exact keel rule; the allowed patterns are kept and the rest is left to the permission mode", f.Key, tool)
				} else {
					rules.add("deny", name)
				}
			}
		default:
			d.errorf(f.Line, "%s.%s must be an action or a map of pattern to action, got %s", f.Key, tool, kind(v))
			return
		}
	}
	if len(unmapped) > 0 {
		d.warnf(f.Line, "%s: no keel equivalent for %s; ignored", f.Key, strings.Join(unmapped, ", "))
	}
	rules.Allow, rules.Ask, rules.Deny = dedupe(rules.Allow), dedupe(rules.Ask), dedupe(rules.Deny)
	d.def.Permissions = rules
}

func (r *Rules) add(action, rule string) bool {
	switch action {
	case "allow":
		r.Allow = append(r.Allow, rule)
	case "ask":
		r.Ask = append(r.Ask, rule)
	case "deny":
		r.Deny = append(r.Deny, rule)
	default:
		return false
	}
	return true
}
