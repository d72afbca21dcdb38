package plugin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree writes files (path → content) below root.
func writeTree(t *testing.T, root string, files map[string]string) string {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(rel, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// errorLines renders a plugin's problems as "severity base:line: message" with paths made
// relative to root, for comparisons.
func errorLines(root string, errs []Error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Severity)+" "+strings.ReplaceAll(e.Error(), root+string(filepath.Separator), ""))
	}
	return out
}

// rels renders paths relative to root, as ./x.
func rels(root string, paths []string) []string {
	var out []string
	for _, x := range paths {
		out = append(out, rel(root, x))
	}
	return out
}

func TestLoadDefaultLayout(t *testing.T) {
	root := writeTree(t, filepath.Join(t.TempDir(), "folder-name"), map[string]string{
		"commands/hello.md":               "---\ndescription: hi\n---\nhi",
		"agents/helper.md":                "---\nname: helper\ndescription: helps\n---\nhelp",
		"skills/s/SKILL.md":               "---\nname: s\ndescription: d\n---\nb",
		"hooks/hooks.json":                `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/check --data ${CLAUDE_PLUGIN_DATA}"}]}]}}`,
		".mcp.json":                       `{"srv": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv"}}`,
		".lsp.json":                       `{"go": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/lsp", "args": ["--root", "${CLAUDE_PLUGIN_ROOT}"], "extensionToLanguage": {".go": "go"}}}`,
		"output-styles/terse.md":          "---\nname: Terse Style\ndescription: short\nkeep-coding-instructions: true\n---\nBe terse.",
		"output-styles/_fragments/x.md":   "a fragment, not a style",
		"bin/check":                       "#!/bin/sh\n",
		"README.md":                       "# not a component",
		"hooks/hooks-cursor.json":         `{"version": 1, "hooks": {"sessionStart": [{"command": "./x"}]}}`,
		".claude-plugin/marketplace.json": `{"name": "m", "owner": {"name": "o"}, "plugins": []}`,
	})
	p := Load(Spec{Root: root, DataRoot: "/data"})
	if p.Name != "folder-name" || p.ID != "folder-name@inline" || p.HasManifest {
		t.Errorf("name %q id %q manifest %v: a plugin without manifest is named after its folder", p.Name, p.ID, p.HasManifest)
	}
	if len(p.Errors) != 0 {
		t.Errorf("problems: %v", errorLines(root, p.Errors))
	}
	got := map[string][]string{"commands": rels(root, p.Commands), "agents": rels(root, p.Agents), "skills": rels(root, p.Skills), "bin": rels(root, []string{p.BinDir})}
	want := map[string][]string{"commands": {"./commands"}, "agents": {"./agents"}, "skills": {"./skills"}, "bin": {"./bin"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("component folders mismatch (-want +got):\n%s", diff)
	}
	if len(p.Hooks) != 1 || p.Hooks[0].Hooks[0].Command != root+"/bin/check --data /data/folder-name-inline" {
		t.Errorf("hooks = %+v", p.Hooks)
	}
	if !slices.Contains(p.Hooks[0].Hooks[0].Env, "CLAUDE_PLUGIN_DATA=/data/folder-name-inline") {
		t.Errorf("hook env = %q", p.Hooks[0].Hooks[0].Env)
	}
	servers, errs := p.MCPServers(nil)
	if len(errs) != 0 || len(servers) != 1 || servers[0].Name != "plugin_folder-name_srv" || servers[0].Command != root+"/bin/srv" || servers[0].Env["CLAUDE_PLUGIN_ROOT"] != root {
		t.Errorf("mcp = %+v %v", servers, errs)
	}
	if len(p.LSP) != 1 || p.LSP[0].Name != "plugin:folder-name:go" || p.LSP[0].Server.V.Command != root+"/bin/lsp" ||
		!slices.Equal(p.LSP[0].Server.V.Args, []string{"--root", root}) {
		t.Errorf("lsp = %+v", p.LSP)
	}
	if diff := cmp.Diff([]OutputStyle{{Name: "folder-name:terse", DisplayName: "Terse Style", Description: "short", KeepCodingInstructions: true,
		Path: filepath.Join(root, "output-styles/terse.md"), Body: "Be terse."}}, p.OutputStyles); diff != "" {
		t.Errorf("output styles mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadManifestPathKeys(t *testing.T) {
	root := writeTree(t, t.TempDir(), map[string]string{
		".claude-plugin/plugin.json": `{
  "name": "p",
  "version": "2.0.0",
  "commands": ["./custom/one.md", "./commands"],
  "agents": "./team/a.md",
  "skills": ["./skills", "./skills/inner", "./more-skills"],
  "hooks": ["./hooks/extra.json", {"Stop": [{"hooks": [{"type": "command", "command": "stop ${CLAUDE_PLUGIN_ROOT}"}]}]}],
  "mcpServers": {"inline": {"type": "http", "url": "https://example.com/mcp"}},
  "outputStyles": "./styles/s.md"
}`,
		"custom/one.md":          "---\ndescription: one\n---\n",
		"commands/two.md":        "---\ndescription: two\n---\n",
		"agents/ignored.md":      "---\nname: ignored\ndescription: not loaded: agents replaces the default\n---\n",
		"team/a.md":              "---\nname: a\ndescription: a\n---\n",
		"skills/inner/SKILL.md":  "---\nname: inner\ndescription: d\n---\n",
		"more-skills/x/SKILL.md": "---\nname: x\ndescription: d\n---\n",
		"hooks/hooks.json":       `{"description": "default", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "start"}]}]}}`,
		"hooks/extra.json":       `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "pre"}]}]}}`,
		"output-styles/no.md":    "not loaded: outputStyles replaces the default",
		"styles/s.md":            "---\nname: S\n---\nstyle",
		".mcp.json":              `{"mcpServers": {"file": {"command": "f"}}}`,
	})
	p := Load(Spec{Root: root})
	if len(p.Errors) != 0 {
		t.Fatalf("problems: %v", errorLines(root, p.Errors))
	}
	got := map[string][]string{"commands": rels(root, p.Commands), "agents": rels(root, p.Agents), "skills": rels(root, p.Skills)}
	want := map[string][]string{
		"commands": {"./custom/one.md", "./commands"},
		"agents":   {"./team/a.md"},
		"skills":   {"./skills", "./skills/inner", "./more-skills"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths mismatch (-want +got):\n%s", diff)
	}
	var hookCmds []string
	for _, g := range p.Hooks {
		hookCmds = append(hookCmds, g.Event+":"+g.Hooks[0].Command)
	}
	if diff := cmp.Diff([]string{"SessionStart:start", "PreToolUse:pre", "Stop:stop " + root}, hookCmds); diff != "" {
		t.Errorf("hooks: the default file, then the declared file and the inline object (-want +got):\n%s", diff)
	}
	servers, _ := p.MCPServers(nil)
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"plugin_p_file", "plugin_p_inline"}, names); diff != "" {
		t.Errorf("mcp servers: .mcp.json and the manifest's own (-want +got):\n%s", diff)
	}
	if len(p.OutputStyles) != 1 || p.OutputStyles[0].Name != "p:s" {
		t.Errorf("output styles = %+v", p.OutputStyles)
	}
}

// A broken manifest, an unknown key, a missing path and a hooks file that does not parse are
// each named with file, line and what was expected; the rest of the plugin still loads.
func TestLoadProblems(t *testing.T) {
	root := writeTree(t, filepath.Join(t.TempDir(), "broken"), map[string]string{
		".claude-plugin/plugin.json": `{
  "name": "my plugin",
  "author": "Someone",
  "colour": "red",
  "skills": "skills-without-prefix",
  "commands": ["./missing"],
  "hooks": "./hooks/bad.json",
  "mcpServers": ["/abs/servers.json"],
  "userConfig": {"k": {"type": "string"}}
}`,
		"skills-without-prefix/s/SKILL.md": "---\nname: s\ndescription: d\n---\n",
		"hooks/bad.json":                   "{\"hooks\": {\n  \"PreToolUse\": [,]\n}}",
		"agents/a.md":                      "---\nname: a\ndescription: still loads\n---\n",
	})
	p := Load(Spec{Root: root})
	if p.Name != "broken" {
		t.Errorf("an unusable manifest name falls back to the folder: %q", p.Name)
	}
	want := []string{
		`error .claude-plugin/plugin.json:2: name "my plugin" contains spaces; use kebab-case (e.g. "my-plugin")`,
		`error .claude-plugin/plugin.json:3: author is a string, want an object {"name": "…", "email": "…", "url": "…"} (keel takes the string as the name)`,
		`warning .claude-plugin/plugin.json:4: unknown key colour (ignored; the keys are $schema, name, displayName, version, description, author, homepage, repository, license, keywords, commands, agents, skills, hooks, mcpServers, lspServers, outputStyles)`,
		`warning .claude-plugin/plugin.json:9: userConfig: keel does not ask for plugin options yet, so ${user_config.KEY} stays unexpanded (ignored)`,
		`error .claude-plugin/plugin.json:6: commands[0] "./missing" does not exist in the plugin (missing)`,
		`error .claude-plugin/plugin.json:5: skills "skills-without-prefix" must start with ./ (Claude Code refuses it; keel reads it as ./skills-without-prefix)`,
		`error hooks/bad.json:2: invalid JSON: invalid character ',' looking for beginning of value`,
		`error .claude-plugin/plugin.json:8: mcpServers[0] "/abs/servers.json" must be a path relative to the plugin root, starting with ./`,
	}
	if diff := cmp.Diff(want, errorLines(root, p.Errors)); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	if len(p.Skills) != 1 || len(p.Agents) != 1 {
		t.Errorf("the rest must still load: skills %v agents %v", p.Skills, p.Agents)
	}
	for _, e := range p.Errors {
		if e.Plugin != "broken@inline" {
			t.Errorf("error tagged %q, want broken@inline", e.Plugin)
		}
	}
}

func TestLoadNotAFolder(t *testing.T) {
	p := Load(Spec{Root: filepath.Join(t.TempDir(), "nope")})
	if len(p.Errors) != 1 || p.Errors[0].Type != ErrPathNotFound {
		t.Errorf("errors = %v", p.Errors)
	}
}
