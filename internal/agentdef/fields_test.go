package agentdef

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseFM parses an agent file whose frontmatter is the given lines (after "name" and
// "description", which the helper adds unless the lines set them) and returns the definition
// and the diagnostics as "path:line: message" strings prefixed with the severity.
func parseFM(t *testing.T, lines ...string) (*Definition, []string) {
	t.Helper()
	fm := strings.Join(lines, "\n")
	if !strings.Contains(fm, "name:") {
		fm = "name: a\n" + fm
	}
	if !strings.Contains(fm, "description:") {
		fm = "description: d\n" + fm
	}
	def, diags := ParseMarkdown("agent.md", []byte("---\n"+fm+"\n---\nPrompt.\n"))
	return def, render(diags)
}

func render(diags []Diagnostic) []string {
	var out []string
	for _, d := range diags {
		out = append(out, string(d.Severity)+": "+d.Error())
	}
	return out
}

// base is the definition parseFM produces with no extra lines.
func base() *Definition {
	return &Definition{Name: "a", Description: "d", Prompt: "Prompt.", Format: FormatKeel, Path: "agent.md"}
}

func with(f func(d *Definition)) *Definition {
	d := base()
	f(d)
	return d
}

func TestFieldsValid(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  *Definition
		diags []string
	}{
		{"minimal", nil, base(), nil},
		{"tools comma string", []string{"tools: Read, Grep, Glob"}, with(func(d *Definition) { d.Tools = []string{"Read", "Grep", "Glob"} }), nil},
		{"tools comma without spaces", []string{"tools: Read,Glob,LS,Shell"}, with(func(d *Definition) { d.Tools = []string{"Read", "Glob", "LS", "Shell"} }), nil},
		{"tools space string with pattern", []string{"tools: Read Grep Bash(git add:*)"}, with(func(d *Definition) { d.Tools = []string{"Read", "Grep", "Bash(git add:*)"} }), nil},
		{"tools block list", []string{"tools:", "  - Read", "  - \"Bash(./scripts/gh.sh:*)\""}, with(func(d *Definition) { d.Tools = []string{"Read", "Bash(./scripts/gh.sh:*)"} }), nil},
		{"tools JSON flow list", []string{`tools: ["Read", "Grep"]`}, with(func(d *Definition) { d.Tools = []string{"Read", "Grep"} }), nil},
		{"tools unquoted flow list", []string{"tools: [Read, Grep, Glob, Bash]"}, with(func(d *Definition) { d.Tools = []string{"Read", "Grep", "Glob", "Bash"} }), nil},
		{"tools multi-line flow list", []string{"tools: [", "  Read,", "  mcp__context7__*,", "]"}, with(func(d *Definition) { d.Tools = []string{"Read", "mcp__context7__*"} }), nil},
		{"tools empty list", []string{"tools: []"}, with(func(d *Definition) { d.Tools = []string{} }), nil},
		{"tools empty value inherits", []string{"tools:"}, base(), nil},
		{"tools star", []string{`tools: "*"`}, with(func(d *Definition) { d.Tools = []string{"*"} }), nil},
		{"tools star in list", []string{"tools: [Read, '*']"}, with(func(d *Definition) { d.Tools = []string{"*"} }), nil},
		{"tools duplicates", []string{"tools: Read, Read, Grep"}, with(func(d *Definition) { d.Tools = []string{"Read", "Grep"} }), nil},
		{"tools map of booleans", []string{"tools:", "  Read: true", "  Grep: true", "  Bash: false"}, with(func(d *Definition) {
			d.Tools = []string{"Grep", "Read"}
			d.DisallowedTools = []string{"Bash"}
		}), nil},
		{"tools map only false", []string{"tools: {Bash: false}"}, with(func(d *Definition) { d.DisallowedTools = []string{"Bash"} }), nil},
		{"allowedTools", []string{"allowedTools:", `  - "Bash(*)"`, `  - "mcp__*"`}, with(func(d *Definition) { d.Tools = []string{"Bash(*)", "mcp__*"} }), nil},
		{"allowed-tools", []string{"allowed-tools: Read"}, with(func(d *Definition) { d.Tools = []string{"Read"} }), nil},
		{"tools and allowedTools", []string{"tools: Read", "allowedTools: Grep"}, with(func(d *Definition) { d.Tools = []string{"Grep"} }),
			[]string{`warning: agent.md:5: allowedTools repeats "tools" from line 4; the later value wins`}},
		{"disallowedTools", []string{"disallowedTools: Write, Edit"}, with(func(d *Definition) { d.DisallowedTools = []string{"Write", "Edit"} }), nil},
		{"disallowedTools star", []string{"disallowedTools: '*'"}, with(func(d *Definition) { d.DisallowedTools = []string{"*"} }), nil},
		{"model alias", []string{"model: sonnet"}, with(func(d *Definition) { d.Model = "sonnet" }), nil},
		{"model full id", []string{"model: claude-opus-4-6"}, with(func(d *Definition) { d.Model = "claude-opus-4-6" }), nil},
		{"model inherit", []string{"model: inherit"}, with(func(d *Definition) { d.Model = ModelInherit }), nil},
		{"model unknown passes", []string{"model: fable"}, with(func(d *Definition) { d.Model = "fable" }), nil},
		{"permissionMode default", []string{"permissionMode: default"}, with(func(d *Definition) { d.PermissionMode = ModeDefault }), nil},
		{"permissionMode acceptEdits", []string{"permissionMode: acceptEdits"}, with(func(d *Definition) { d.PermissionMode = ModeAcceptEdits }), nil},
		{"permissionMode plan", []string{"permissionMode: plan"}, with(func(d *Definition) { d.PermissionMode = ModePlan }), nil},
		{"permissionMode dontAsk", []string{"permissionMode: dontAsk"}, with(func(d *Definition) { d.PermissionMode = ModeDontAsk }), nil},
		{"permissionMode bypassPermissions", []string{"permissionMode: bypassPermissions"}, with(func(d *Definition) { d.PermissionMode = ModeBypassPermissions }), nil},
		{"permissionMode bubble", []string{"permissionMode: bubble"}, with(func(d *Definition) { d.PermissionMode = ModeBubble }), nil},
		{"maxTurns", []string{"maxTurns: 15"}, with(func(d *Definition) { d.MaxTurns = 15 }), nil},
		{"maxTurns quoted", []string{`maxTurns: "15"`}, with(func(d *Definition) { d.MaxTurns = 15 }), nil},
		{"effort level", []string{"effort: high"}, with(func(d *Definition) { d.Effort = Effort{Level: "high"} }), nil},
		{"effort level capitalised", []string{"effort: Max"}, with(func(d *Definition) { d.Effort = Effort{Level: "max"} }), nil},
		{"effort tokens", []string{"effort: 8000"}, with(func(d *Definition) { d.Effort = Effort{Tokens: 8000} }), nil},
		{"effort xhigh", []string{"effort: xhigh"}, with(func(d *Definition) { d.Effort = Effort{Level: "xhigh"} }), nil},
		{"background", []string{"background: true"}, with(func(d *Definition) { d.Background = true }), nil},
		{"initialPrompt", []string{"initialPrompt: Start by reading the README."}, with(func(d *Definition) { d.InitialPrompt = "Start by reading the README." }), nil},
		{"skills list", []string{"skills:", "  - weather-fetcher", "  - pdf"}, with(func(d *Definition) { d.Skills = []string{"weather-fetcher", "pdf"} }), nil},
		{"skills string", []string{"skills: a, b"}, with(func(d *Definition) { d.Skills = []string{"a", "b"} }), nil},
		{"memory user", []string{"memory: user"}, with(func(d *Definition) { d.Memory = MemoryUser }), nil},
		{"memory project", []string{"memory: project"}, with(func(d *Definition) { d.Memory = MemoryProject }), nil},
		{"memory local", []string{"memory: local"}, with(func(d *Definition) { d.Memory = MemoryLocal }), nil},
		{"isolation", []string{"isolation: worktree"}, with(func(d *Definition) { d.Isolation = IsolationWorktree }), nil},
		{"mcpServers names and inline", []string{"mcpServers:", "  - github", "  - local:", "      command: ./srv", "      args: [--x]", "  - remote:", "      type: sse", "      url: http://127.0.0.1:1/sse"},
			with(func(d *Definition) {
				d.MCPServers = []MCPServer{
					{Name: "github"},
					{Name: "local", Config: json.RawMessage(`{"args":["--x"],"command":"./srv","type":"stdio"}`)},
					{Name: "remote", Config: json.RawMessage(`{"type":"sse","url":"http://127.0.0.1:1/sse"}`)},
				}
			}), nil},
		{"mcpServers map form", []string{"mcpServers:", "  docs:", "    url: http://127.0.0.1:1/mcp"},
			with(func(d *Definition) {
				d.MCPServers = []MCPServer{{Name: "docs", Config: json.RawMessage(`{"type":"http","url":"http://127.0.0.1:1/mcp"}`)}}
			}), nil},
		{"hooks", []string{"hooks:", "  PreToolUse:", "    - matcher: Bash", "      hooks:", "        - type: command", "          command: ./check.sh", "          timeout: 5"},
			with(func(d *Definition) {
				d.Hooks = json.RawMessage(`{"PreToolUse":[{"hooks":[{"command":"./check.sh","timeout":5,"type":"command"}],"matcher":"Bash"}]}`)
			}), nil},
		{"color name", []string{"color: Blue"}, with(func(d *Definition) { d.Color = "blue" }), nil},
		{"color hex", []string{`color: "#34D399"`}, with(func(d *Definition) { d.Color = "#34D399" }), nil},
		{"color unknown dropped", []string{"color: teal"}, base(),
			[]string{`warning: agent.md:4: color "teal" is not one of red, blue, green, yellow, purple, orange, pink, cyan or a #RRGGBB hex colour; ignored`}},
		{"omitMemory", []string{"omitMemory: true"}, with(func(d *Definition) { d.OmitMemory = true }), nil},
		{"unknown keys kept", []string{"emoji: 🎠", "level: 2"}, with(func(d *Definition) { d.Extra = map[string]any{"emoji": "🎠", "level": uint64(2)} }),
			[]string{"warning: agent.md:4: unknown fields kept but not used: emoji, level"}},
		{"name with spaces and trailing blanks", []string{"name: Programmatic & Display Buyer  "}, with(func(d *Definition) { d.Name = "Programmatic & Display Buyer" }), nil},
		{"literal backslash n survives", []string{`description: one\n\ntwo`}, with(func(d *Definition) { d.Description = `one\n\ntwo` }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, diags := parseFM(t, tt.lines...)
			if diff := cmp.Diff(tt.diags, diags); diff != "" {
				t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, def); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldsInvalid(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		diags []string
	}{
		{"missing name", []string{"name:"}, []string{`error: agent.md:1: missing required "name" field in frontmatter`}},
		{"missing description", []string{"description: ''"}, []string{`error: agent.md:1: missing required "description" field in frontmatter`}},
		{"name not a string", []string{"name: [a, b]"}, []string{
			"error: agent.md:3: name must be a string, got a list",
			`error: agent.md:1: missing required "name" field in frontmatter`,
		}},
		{"permissionMode", []string{"permissionMode: yolo"}, []string{`error: agent.md:4: permissionMode "yolo" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions, auto, bubble`}},
		{"permissionMode case", []string{"permissionMode: Plan"}, []string{`error: agent.md:4: permissionMode "Plan" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions, auto, bubble`}},
		{"maxTurns zero", []string{"maxTurns: 0"}, []string{"error: agent.md:4: maxTurns must be a positive integer, got 0"}},
		{"maxTurns negative", []string{"maxTurns: -3"}, []string{"error: agent.md:4: maxTurns must be a positive integer, got -3"}},
		{"maxTurns fraction", []string{"maxTurns: 1.5"}, []string{"error: agent.md:4: maxTurns must be a positive integer, got 1.5"}},
		{"maxTurns text", []string{"maxTurns: ten"}, []string{`error: agent.md:4: maxTurns must be a positive integer, got "ten"`}},
		{"effort", []string{"effort: extreme"}, []string{`error: agent.md:4: effort "extreme" is not one of low, medium, high, xhigh, max or a positive integer`}},
		{"effort zero", []string{"effort: 0"}, []string{`error: agent.md:4: effort 0 is not one of low, medium, high, xhigh, max or a positive integer`}},
		{"background", []string{"background: maybe"}, []string{`error: agent.md:4: background must be true or false, got "maybe"`}},
		{"memory", []string{"memory: team"}, []string{`error: agent.md:4: memory "team" is not one of user, project, local`}},
		{"isolation", []string{"isolation: container"}, []string{`error: agent.md:4: isolation "container" is not one of worktree`}},
		{"tools number", []string{"tools: 5"}, []string{"error: agent.md:4: tools must be a list of tool names or a comma-separated string, got a number"}},
		{"tools nested list", []string{"tools: [Read, [Grep]]"}, []string{"error: agent.md:4: tools entry 2 must be a tool name, got a list"}},
		{"tools map non-boolean", []string{"tools: {Read: sometimes}"}, []string{`error: agent.md:4: tools: "Read" must be true or false, got "sometimes"`}},
		{"model list", []string{"model: [a]"}, []string{"error: agent.md:4: model must be a string, got a list"}},
		{"skills map", []string{"skills: {a: 1}"}, []string{"error: agent.md:4: skills must be a list of names, got a map"}},
		{"mcpServers bad type", []string{"mcpServers:", "  - x:", "      type: grpc", "      url: http://h"}, []string{`error: agent.md:4: mcpServers "x": type "grpc" is not one of stdio, http, sse`}},
		{"mcpServers stdio without command", []string{"mcpServers:", "  - x:", "      type: stdio"}, []string{`error: agent.md:4: mcpServers "x": a stdio server needs a "command" string`}},
		{"mcpServers http without url", []string{"mcpServers: {x: {type: http}}"}, []string{`error: agent.md:4: mcpServers "x": a http server needs a "url" string`}},
		{"mcpServers neither", []string{"mcpServers: {x: {env: {}}}"}, []string{`error: agent.md:4: mcpServers "x": needs a "command" (stdio) or a "url" (http, sse)`}},
		{"mcpServers args", []string{"mcpServers: {x: {command: a, args: b}}"}, []string{`error: agent.md:4: mcpServers "x": args must be a list of strings`}},
		{"mcpServers entry", []string{"mcpServers: [1]"}, []string{"error: agent.md:4: mcpServers entry 1 must be a server name or a map of name to config, got a number"}},
		{"hooks not a map", []string{"hooks: [a]"}, []string{"error: agent.md:4: hooks must be a map of event name to a list of matchers, got a list"}},
		{"hooks event not a list", []string{"hooks: {Stop: x}"}, []string{`error: agent.md:4: hooks.Stop must be a list of matchers, got a string`}},
		{"hooks without hooks list", []string{"hooks: {Stop: [{matcher: x}]}"}, []string{`error: agent.md:4: hooks.Stop[0]: "hooks" must be a list, got nothing`}},
		{"hooks bad type", []string{"hooks: {Stop: [{hooks: [{type: shell}]}]}"}, []string{`error: agent.md:4: hooks.Stop[0].hooks[0]: type "shell" is not one of command, prompt, agent, http`}},
		{"hooks no command", []string{"hooks: {Stop: [{hooks: [{type: command}]}]}"}, []string{`error: agent.md:4: hooks.Stop[0].hooks[0]: a command hook needs a "command" string`}},
		{"every error reported", []string{"permissionMode: x", "maxTurns: 0", "memory: y"}, []string{
			`error: agent.md:4: permissionMode "x" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions, auto, bubble`,
			"error: agent.md:5: maxTurns must be a positive integer, got 0",
			`error: agent.md:6: memory "y" is not one of user, project, local`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, diags := parseFM(t, tt.lines...)
			if def != nil {
				t.Errorf("definition returned despite errors: %+v", def)
			}
			if diff := cmp.Diff(tt.diags, diags); diff != "" {
				t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLenientFallback(t *testing.T) {
	in := "---\nname: hunter\ndescription: Reviews code. Examples:\\n  user: 'check this'\\n  assistant: \"ok\"\ntools: Read, Grep\nmodel: inherit\ncolor: yellow\n---\nFind silent failures.\n"
	def, diags := ParseMarkdown("hunter.md", []byte(in))
	want := &Definition{
		Name:        "hunter",
		Description: `Reviews code. Examples:\n  user: 'check this'\n  assistant: "ok"`,
		Prompt:      "Find silent failures.",
		Tools:       []string{"Read", "Grep"},
		Model:       "inherit",
		Color:       "yellow",
		Format:      FormatKeel,
		Path:        "hunter.md",
	}
	if diff := cmp.Diff(want, def); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	wantDiags := []string{"warning: hunter.md:3: frontmatter is not valid YAML (mapping value is not allowed in this context); read it line by line, recovering only simple keys"}
	if diff := cmp.Diff(wantDiags, render(diags)); diff != "" {
		t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
	}
}

func TestLenientFallbackStillValidates(t *testing.T) {
	in := "---\nname: x\ndescription: a: b\nmaxTurns: lots\n---\n"
	def, diags := ParseMarkdown("x.md", []byte(in))
	if def != nil {
		t.Fatalf("want no definition, got %+v", def)
	}
	want := []string{
		"warning: x.md:3: frontmatter is not valid YAML (mapping value is not allowed in this context); read it line by line, recovering only simple keys",
		`error: x.md:4: maxTurns must be a positive integer, got "lots"`,
	}
	if diff := cmp.Diff(want, render(diags)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestNoFrontmatter(t *testing.T) {
	def, diags := ParseMarkdown("README.md", []byte("# Agents\n\nNotes.\n"))
	if def != nil {
		t.Fatalf("want no definition, got %+v", def)
	}
	want := []string{"warning: README.md:1: no frontmatter (a first line of ---); not an agent definition, skipped"}
	if diff := cmp.Diff(want, render(diags)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func FuzzParseMarkdown(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: b: c\ntools: [x, y]\n---\nbody"))
	f.Add([]byte("---\nname: a\ndescription: d\nmcpServers: {s: {command: c}}\nhooks: {Stop: [{hooks: [{type: command, command: x}]}]}\n---\n"))
	f.Add([]byte("---\ntools:\n  Read: true\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		def, diags := ParseMarkdown("f.md", data)
		hasError := false
		for _, d := range diags {
			if d.Path != "f.md" || d.Message == "" {
				t.Fatalf("malformed diagnostic %+v", d)
			}
			hasError = hasError || d.Severity == SeverityError
		}
		if def != nil && (hasError || def.Name == "" || def.Description == "") {
			t.Fatalf("definition %+v returned with errors %v", def, diags)
		}
		if def != nil {
			if _, err := json.Marshal(def); err != nil {
				t.Fatalf("definition does not marshal: %v", err)
			}
		}
	})
}
