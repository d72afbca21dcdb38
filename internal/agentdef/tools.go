package agentdef

import (
	"slices"
	"sort"
	"strings"

	"github.com/keel-dev/keel/internal/frontmatter"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/permission"
)

// toolSpec is a tool list after normalisation.
type toolSpec struct {
	set   bool     // the value said something (an absent or empty value inherits)
	isMap bool     // written as a map of booleans
	allow []string // the listed names; a map's true entries
	deny  []string // a map's false entries
}

// toolList normalises the shapes tool lists are written in: a YAML block or flow list, a
// comma-separated string (with or without spaces), a space-separated string (the Agent Skills
// style, "Read Grep Bash(git add:*)"), a map of booleans (opencode), and "*". mapName turns a
// harness's tool name into keel's; ok=false from it keeps the name and warns once.
func (d *decoder) toolList(f frontmatter.Field, mapName func(string) (string, bool)) (toolSpec, bool) {
	var spec toolSpec
	var names []string
	switch v := f.Value.(type) {
	case nil:
		return spec, true
	case string:
		if strings.TrimSpace(v) == "" {
			return spec, true
		}
		names = permission.SplitToolList(v)
	case []any:
		names = []string{}
		for i, item := range v {
			s, ok := scalar(item)
			if !ok {
				d.errorf(f.Line, "%s entry %d must be a tool name, got %s", f.Key, i+1, kind(item))
				return spec, false
			}
			names = append(names, permission.SplitToolList(s)...)
		}
	case map[string]any:
		spec.isMap = true
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			on, ok := boolean(v[k])
			if !ok {
				d.errorf(f.Line, "%s: %q must be true or false, got %s", f.Key, k, quoted(v[k]))
				return spec, false
			}
			if on {
				spec.allow = append(spec.allow, k)
			} else {
				spec.deny = append(spec.deny, k)
			}
		}
		spec.set = true
		spec.allow = d.mapTools(f, spec.allow, mapName)
		spec.deny = d.mapTools(f, spec.deny, mapName)
		return spec, true
	default:
		d.errorf(f.Line, "%s must be a list of tool names or a comma-separated string, got %s", f.Key, kind(f.Value))
		return spec, false
	}
	spec.set = true
	spec.allow = d.mapTools(f, names, mapName)
	if slices.Contains(spec.allow, "*") {
		spec.allow = []string{"*"}
	}
	return spec, true
}

// mapTools maps and de-duplicates names, warning once about the names without an equivalent.
func (d *decoder) mapTools(f frontmatter.Field, names []string, mapName func(string) (string, bool)) []string {
	if names == nil {
		return nil
	}
	out := make([]string, 0, len(names))
	var unmapped []string
	for _, n := range names {
		m, ok := mapName(n)
		if !ok {
			unmapped = append(unmapped, n)
			m = n
		}
		if m != "" {
			out = append(out, m)
		}
	}
	if len(unmapped) > 0 {
		d.warnf(f.Line, "%s: no keel equivalent for %s; kept as written", f.Key, strings.Join(unmapped, ", "))
	}
	return dedupe(out)
}

// keelToolName keeps names as written: in keel's own format an unknown name may be an MCP tool
// or one a later version adds, and the tool filter simply finds no match.
func keelToolName(n string) (string, bool) { return n, true }

func dedupe(s []string) []string {
	if s == nil {
		return nil
	}
	out := s[:0:0]
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// readOnlyTools is the allow-list for an agent that must not change anything (Codex's
// read-only sandbox). Bash is left out: without a sandbox a shell can write.
var readOnlyTools = []string{"Read", "Glob", "Grep", "WebFetch", "WebSearch"}

// geminiTools maps Gemini CLI's built-in tool names to keel's.
var geminiTools = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"read_file":           "Read",
		"read_many_files":     "Read",
		"write_file":          "Write",
		"replace":             "Edit",
		"edit":                "Edit",
		"run_shell_command":   "Bash",
		"glob":                "Glob",
		"list_directory":      "Glob",
		"ls":                  "Glob",
		"grep_search":         "Grep",
		"search_file_content": "Grep",
		"grep":                "Grep",
		"google_web_search":   "WebSearch",
		"web_search":          "WebSearch",
		"web_fetch":           "WebFetch",
		"write_todos":         "TodoWrite",
		"activate_skill":      "Skill",
		"*":                   "*",
	}
}}

func geminiToolName(n string) (string, bool) {
	if m, ok := geminiTools.Get()[n]; ok {
		return m, true
	}
	if strings.HasPrefix(n, "mcp__") || strings.HasPrefix(n, "mcp_") {
		return n, true
	}
	return "", false
}

// opencodeTools maps opencode's tool names (also its permission keys) to keel's.
var opencodeTools = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"read":      "Read",
		"write":     "Write",
		"edit":      "Edit",
		"patch":     "Edit",
		"multiedit": "Edit",
		"bash":      "Bash",
		"grep":      "Grep",
		"glob":      "Glob",
		"list":      "Glob",
		"task":      "Agent",
		"webfetch":  "WebFetch",
		"websearch": "WebSearch",
		"todowrite": "TodoWrite",
		"skill":     "Skill",
		"*":         "*",
	}
}}

func opencodeToolName(n string) (string, bool) {
	if m, ok := opencodeTools.Get()[strings.ToLower(n)]; ok {
		return m, true
	}
	// opencode names MCP tools <server>_<tool> and allows globs such as "github_*"; they have no
	// reliable keel spelling.
	return "", false
}
