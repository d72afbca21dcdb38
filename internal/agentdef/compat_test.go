package agentdef

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGemini(t *testing.T) {
	in := `---
name: log-reader
description: >
  Reads logs and
  reports errors.
kind: local
tools:
  - "read_file"
  - read_many_files
  - grep_search
  - run_shell_command
  - replace
  - save_memory
temperature: 0.2
max_turns: 20
timeout_mins: 5
model: gemini-2.5-pro
---
Read the logs.
`
	def, diags := parseGemini("log-reader.md", []byte(in))
	want := &Definition{
		Name:        "log-reader",
		Description: "Reads logs and reports errors.",
		Prompt:      "Read the logs.",
		Tools:       []string{"Read", "Grep", "Bash", "Edit", "save_memory"},
		Model:       "gemini-2.5-pro",
		MaxTurns:    20,
		Extra:       map[string]any{"kind": "local", "temperature": 0.2, "timeout_mins": uint64(5)},
		Format:      FormatGemini,
		Path:        "log-reader.md",
	}
	if diff := cmp.Diff(want, def); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	wantDiags := []string{
		"warning: log-reader.md:7: tools: no keel equivalent for save_memory; kept as written",
		`warning: log-reader.md:14: gemini field "temperature" has no keel equivalent; ignored`,
		`warning: log-reader.md:16: gemini field "timeout_mins" has no keel equivalent; ignored`,
	}
	if diff := cmp.Diff(wantDiags, render(diags)); diff != "" {
		t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
	}

	_, diags = parseGemini("r.md", []byte("---\nname: r\ndescription: d\nkind: remote\n---\n"))
	if diff := cmp.Diff([]string{`error: r.md:4: kind "remote" is not supported; only local agents are`}, render(diags)); diff != "" {
		t.Errorf("remote kind mismatch (-want +got):\n%s", diff)
	}
}

func TestGeminiToolShapes(t *testing.T) {
	tests := []struct {
		tools string
		want  []string
	}{
		{`tools: ["*"]`, []string{"*"}},
		{"tools: [read_file, write_file, glob, grep_search]", []string{"Read", "Write", "Glob", "Grep"}},
		{"tools: read_file, write_file, replace, run_shell_command, glob, search_file_content", []string{"Read", "Write", "Edit", "Bash", "Glob", "Grep"}},
		{"tools: [list_directory, google_web_search, web_fetch, mcp__gh__issue]", []string{"Glob", "WebSearch", "WebFetch", "mcp__gh__issue"}},
	}
	for _, tt := range tests {
		def, diags := parseGemini("g.md", []byte("---\nname: g\ndescription: d\n"+tt.tools+"\n---\n"))
		if def == nil || len(diags) > 0 {
			t.Fatalf("%s: %v", tt.tools, diags)
		}
		if diff := cmp.Diff(tt.want, def.Tools); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", tt.tools, diff)
		}
	}
}

func TestOpencode(t *testing.T) {
	in := `---
# Basic info
id: summarizer
name: Summarizer Agent
description: "Summarises long files"
mode: subagent
temperature: 0.1
maxSteps: 8
tools:
  read: true
  grep: true
  bash: false
  write: false
permission:
  bash:
    "*": "deny"
  edit:
    "**/*.env": "deny"
    "docs/**": "ask"
  webfetch: allow
  task:
    helper: "allow"
    "*": "deny"
  lsp:
    "*": "deny"
---
Summarise.
`
	def, diags := parseOpencode("summarizer.md", []byte(in), "helpers/summarizer")
	want := &Definition{
		Name:            "helpers/summarizer",
		Description:     "Summarises long files",
		Prompt:          "Summarise.",
		DisallowedTools: []string{"Bash", "Write"},
		MaxTurns:        8,
		Permissions: &Rules{
			Allow: []string{"Agent(helper)", "WebFetch"},
			Ask:   []string{"Edit(docs/**)"},
			Deny:  []string{"Bash", "Edit(**/*.env)"},
		},
		Extra:  map[string]any{"id": "summarizer", "name": "Summarizer Agent", "mode": "subagent", "temperature": 0.1},
		Format: FormatOpencode,
		Path:   "summarizer.md",
	}
	if diff := cmp.Diff(want, def); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	wantDiags := []string{
		`warning: summarizer.md:7: opencode field "temperature" has no keel equivalent; ignored`,
		`warning: summarizer.md:14: permission.task: "deny all but the allowed patterns" has no exact keel rule; the allowed patterns are kept and the rest is left to the permission mode`,
		"warning: summarizer.md:14: permission: no keel equivalent for lsp; ignored",
		"warning: summarizer.md:3: unknown fields kept but not used: id",
	}
	if diff := cmp.Diff(wantDiags, render(diags)); diff != "" {
		t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
	}
	if got := opencodeName(filepath.FromSlash("/p/.opencode/agent"), filepath.FromSlash("/p/.opencode/agent/sub/code/review.md")); got != "sub/code/review" {
		t.Errorf("opencodeName = %q", got)
	}
}

func TestCodex(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.toml"), `#:schema https://example.invalid/schema.json
model = "gpt-x"

[agents]
max_threads = 4

[agents.mapper]
description = "Maps code paths before changes."
config_file = "agents/mapper.toml"

[agents.notes]
description = "Keeps notes."
developer_instructions = "Write notes."
`)
	writeFile(t, filepath.Join(dir, "agents/mapper.toml"), `model = "gpt-x-mini"
model_reasoning_effort = "medium"
sandbox_mode = "read-only"

developer_instructions = """
Map the code.
Cite files.
"""
`)
	writeFile(t, filepath.Join(dir, "agents/fixer.toml"), `name = "fixer"
description = "Fixes backend bugs."
model = "gpt-x"
model_reasoning_effort = "xhigh"
sandbox_mode = "workspace-write"
approval_policy = "never"
developer_instructions = "Fix it."

[mcp_servers.browser]
url = "http://127.0.0.1:3000/mcp"
startup_timeout_sec = 20

[mcp_servers.off]
command = "x"
enabled = false
`)
	writeFile(t, filepath.Join(dir, "agents/checker.toml"), "sandbox_mode = \"read-only\"\ndeveloper_instructions = \"\"\"\nCheck everything.\nThen report.\n\"\"\"\n")
	writeFile(t, filepath.Join(dir, "agents/bad.toml"), "name = \"bad\"\ndescription = \"b\"\nsandbox_mode = \"sometimes\"\n")
	writeFile(t, filepath.Join(dir, "agents/broken.toml"), "name = \"broken\"\ndescription = \n")

	defs, diags, err := readCodexDir(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []*Definition{
		{Name: "mapper", Description: "Maps code paths before changes.", Prompt: "Map the code.\nCite files.", Tools: readOnlyTools, Model: "gpt-x-mini", Effort: Effort{Level: "medium"}, Format: FormatCodex, Path: filepath.Join(dir, "agents/mapper.toml")},
		{Name: "notes", Description: "Keeps notes.", Prompt: "Write notes.", Format: FormatCodex, Path: filepath.Join(dir, "config.toml")},
		{Name: "checker", Description: "Check everything.", Prompt: "Check everything.\nThen report.", Tools: readOnlyTools, Format: FormatCodex, Path: filepath.Join(dir, "agents/checker.toml")},
		{Name: "fixer", Description: "Fixes backend bugs.", Prompt: "Fix it.", Model: "gpt-x", Effort: Effort{Level: "max"},
			MCPServers: []MCPServer{{Name: "browser", Config: json.RawMessage(`{"startup_timeout_sec":20,"type":"http","url":"http://127.0.0.1:3000/mcp"}`)}},
			Extra:      map[string]any{"approval_policy": "never"},
			Format:     FormatCodex, Path: filepath.Join(dir, "agents/fixer.toml")},
	}
	if diff := cmp.Diff(want, defs); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	var got []string
	for _, d := range diags {
		d.Path = filepath.ToSlash(mustRel(t, dir, d.Path))
		got = append(got, string(d.Severity)+": "+d.Error())
	}
	wantDiags := []string{
		`error: agents/bad.toml:3: sandbox_mode "sometimes" is not one of read-only, workspace-write, danger-full-access`,
		"error: agents/broken.toml:2: invalid TOML: expected value but found '\\n' instead",
		"warning: agents/checker.toml: no name; using the file name \"checker\"",
		"warning: agents/checker.toml: no description; using the first line of developer_instructions",
		`warning: agents/fixer.toml:6: codex field "approval_policy" has no keel equivalent; ignored`,
	}
	if diff := cmp.Diff(wantDiags, got); diff != "" {
		t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
	}
}

func mustRel(t *testing.T, base, p string) string {
	t.Helper()
	rel, err := filepath.Rel(base, p)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
