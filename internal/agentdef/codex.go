package agentdef

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/keel-dev/keel/internal/frontmatter"
	"github.com/keel-dev/keel/internal/lazy"
)

// Codex roles are TOML: either standalone files with name, description and
// developer_instructions, or config layers registered in config.toml under [agents.<name>]
// with a description and a config_file.
var codexFields = lazy.Value[map[string]handler]{New: func() map[string]handler {
	return withFields(map[string]handler{
		"developer_instructions": {"prompt", func(d *decoder, f frontmatter.Field) {
			if s, ok := d.str(f); ok {
				d.def.Prompt = s
			}
		}},
		"model_reasoning_effort":  {"effort", setCodexEffort},
		"sandbox_mode":            {"sandbox_mode", setCodexSandbox},
		"mcp_servers":             {"mcpServers", setCodexMCPServers},
		"config_file":             {"config_file", func(*decoder, frontmatter.Field) {}},
		"approval_policy":         {"approval_policy", unsupportedBy("codex")},
		"nickname_candidates":     {"nickname_candidates", unsupportedBy("codex")},
		"model_reasoning_summary": {"model_reasoning_summary", unsupportedBy("codex")},
		"model_verbosity":         {"model_verbosity", unsupportedBy("codex")},
	})
}}

// codexEfforts maps Codex's reasoning efforts to keel's levels by their place on the scale,
// not by name: Codex's scale ends at xhigh, so its top is keel's top (max), and its minimal,
// below anything keel has, is keel's lowest.
var codexEfforts = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "max"}
}}

func setCodexEffort(d *decoder, f frontmatter.Field) {
	s, _ := scalar(f.Value)
	if level, ok := codexEfforts.Get()[strings.TrimSpace(s)]; ok {
		d.def.Effort = Effort{Level: level}
		return
	}
	d.errorf(f.Line, "model_reasoning_effort %s is not one of minimal, low, medium, high, xhigh", quoted(f.Value))
}

func setCodexSandbox(d *decoder, f frontmatter.Field) {
	s, _ := scalar(f.Value)
	switch strings.TrimSpace(s) {
	case "read-only":
		d.def.Tools = slices.Clone(readOnlyTools)
	case "workspace-write":
		// keel's default: the agent may edit files in the workspace.
	case "danger-full-access":
		d.unsupported(f, "codex")
	default:
		d.errorf(f.Line, "sandbox_mode %s is not one of read-only, workspace-write, danger-full-access", quoted(f.Value))
	}
}

// setCodexMCPServers converts [mcp_servers.<name>] tables (command/args/env or url) into
// inline MCP configurations; a server with enabled = false is left out.
func setCodexMCPServers(d *decoder, f frontmatter.Field) {
	servers, ok := f.Value.(map[string]any)
	if !ok {
		d.errorf(f.Line, "mcp_servers must be a table of servers, got %s", kind(f.Value))
		return
	}
	for _, name := range sortedKeys(servers) {
		cfg, _ := servers[name].(map[string]any)
		if on, ok := cfg["enabled"].(bool); ok && !on {
			continue
		}
		s, ok := d.mcpServer(f.Line, name, servers[name])
		if !ok {
			return
		}
		d.def.MCPServers = append(d.def.MCPServers, s)
	}
}

// codexRole is one role to read: a standalone file, or an [agents.<name>] entry of config.toml
// with the file it points at.
type codexRole struct {
	path     string              // the role file, or config.toml for an entry without one
	config   string              // the config.toml that registered the role, if any
	name     string              // from config.toml; empty for a standalone file
	entry    []frontmatter.Field // the [agents.<name>] table's keys
	line     int                 // line of the [agents.<name>] header
	fromFile bool                // the role came from a directory scan, not config.toml
}

// parseCodexRole reads one role. Fields from the config.toml entry override the file's.
func parseCodexRole(role codexRole, data []byte) (*Definition, []Diagnostic) {
	def := &Definition{Format: FormatCodex, Path: role.path}
	d := newDecoder(role.path, codexFields.Get(), def)
	var fields []frontmatter.Field
	if data != nil {
		var err error
		fields, err = tomlFields(data)
		if err != nil {
			var pe toml.ParseError
			line := 0
			if errors.As(err, &pe) {
				line = pe.Position.Line
			}
			d.errorf(line, "invalid TOML: %s", tomlMessage(err))
			return nil, d.diags
		}
	}
	d.decode(fields)
	if role.entry != nil {
		entry := newDecoder(role.config, codexFields.Get(), def)
		entry.decode(role.entry)
		// The entry's problems are in config.toml, not in the role file.
		d.diags = append(d.diags, entry.diags...)
	}
	if role.name != "" {
		def.Name = role.name
	} else if def.Name == "" && role.fromFile {
		def.Name = strings.TrimSuffix(filepath.Base(role.path), ".toml")
		d.warnf(0, "no name; using the file name %q", def.Name)
	}
	if def.Description == "" && def.Prompt != "" {
		first, _, _ := strings.Cut(strings.TrimSpace(def.Prompt), "\n")
		def.Description = strings.TrimSpace(first)
		d.warnf(0, "no description; using the first line of developer_instructions")
	}
	d.requireIdentity(role.line, "codex role")
	if d.failed() {
		return nil, d.diags
	}
	return def, d.diags
}

func tomlMessage(err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// tomlKeyLine matches a top-level "key =" line; table headers end the top level.
var tomlKeyLine = lazy.Regexp{Expr: `^\s*("[^"]+"|'[^']+'|[A-Za-z0-9_-]+)\s*=`}
var tomlHeader = lazy.Regexp{Expr: `^\s*\[\[?\s*("[^"]+"|'[^']+'|[A-Za-z0-9_.-]+)`}

// tomlFields decodes a TOML document into its top-level keys with their lines. BurntSushi/toml
// does not report key positions, so lines come from a scan of the text: the first line that
// assigns the key at top level, or the first table header starting with it.
func tomlFields(data []byte) ([]frontmatter.Field, error) {
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		return nil, err
	}
	lines := map[string]int{}
	inTable := false
	for i, l := range strings.Split(string(data), "\n") {
		if h := tomlHeader.Get().FindStringSubmatch(l); h != nil {
			inTable = true
			key, _, _ := strings.Cut(strings.Trim(h[1], `"'`), ".")
			if _, ok := lines[key]; !ok {
				lines[key] = i + 1
			}
			continue
		}
		if k := tomlKeyLine.Get().FindStringSubmatch(l); k != nil && !inTable {
			key := strings.Trim(k[1], `"'`)
			if _, ok := lines[key]; !ok {
				lines[key] = i + 1
			}
		}
	}
	keys := sortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int { return lines[a] - lines[b] })
	fields := make([]frontmatter.Field, 0, len(keys))
	for _, k := range keys {
		fields = append(fields, frontmatter.Field{Key: k, Value: normalizeTOML(m[k]), Line: lines[k]})
	}
	return fields, nil
}

// normalizeTOML turns TOML's decoded types into the ones YAML decoding produces.
func normalizeTOML(v any) any {
	switch v := v.(type) {
	case []map[string]any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalizeTOML(x)
		}
		return out
	case []any:
		for i := range v {
			v[i] = normalizeTOML(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalizeTOML(v[k])
		}
	case fmt.Stringer: // dates and times
		return v.String()
	}
	return v
}

// codexConfigRoles reads the [agents.<name>] entries of a Codex config.toml. It returns the
// roles and the role files they claim, so a directory scan does not read those again.
func codexConfigRoles(path string, data []byte) ([]codexRole, []Diagnostic) {
	fields, err := tomlFields(data)
	if err != nil {
		var pe toml.ParseError
		line := 0
		if errors.As(err, &pe) {
			line = pe.Position.Line
		}
		return nil, []Diagnostic{{Path: path, Line: line, Severity: SeverityError, Message: "invalid TOML: " + tomlMessage(err)}}
	}
	var agents map[string]any
	for _, f := range fields {
		if f.Key == "agents" {
			agents, _ = f.Value.(map[string]any)
		}
	}
	var roles []codexRole
	for _, name := range sortedKeys(agents) {
		table, ok := agents[name].(map[string]any)
		if !ok {
			continue // limits such as max_threads sit beside the roles
		}
		line := headerLine(data, "agents."+name)
		var entry []frontmatter.Field
		for _, k := range sortedKeys(table) {
			entry = append(entry, frontmatter.Field{Key: k, Value: table[k], Line: line})
		}
		role := codexRole{path: path, config: path, name: name, entry: entry, line: line}
		if cf, ok := table["config_file"].(string); ok && cf != "" {
			if !filepath.IsAbs(cf) {
				cf = filepath.Join(filepath.Dir(path), cf)
			}
			role.path = cf
		}
		roles = append(roles, role)
	}
	return roles, nil
}

func headerLine(data []byte, table string) int {
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "["+table+"]" {
			return i + 1
		}
	}
	return 0
}

// readCodexRole reads the file of a role (if it has one) and parses it. An entry whose
// config_file is missing is an error in config.toml.
func readCodexRole(configPath string, role codexRole) (*Definition, []Diagnostic) {
	if role.path == configPath {
		return parseCodexRole(role, nil)
	}
	data, err := os.ReadFile(role.path)
	if err != nil {
		return nil, []Diagnostic{{Path: configPath, Line: role.line, Severity: SeverityError,
			Message: fmt.Sprintf("agents.%s: config_file: %v", role.name, err)}}
	}
	return parseCodexRole(role, data)
}
