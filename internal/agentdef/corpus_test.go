package agentdef

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/compattest"
)

func compatDir(t *testing.T) string {
	t.Helper()
	return compattest.Dir(t)
}

// copyTree copies src into dst, so the corpus can be laid out as a project without touching it.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCompatCorpus lays the corpus's agent files out as a project (.claude/agents,
// .gemini/agents, .codex, .opencode/agent), adds one broken file, and checks that every corpus
// file loads with a name and a description, that tool names are mapped, and that the broken
// file reports its error without hiding anything else.
func TestCompatCorpus(t *testing.T) {
	corpus := compatDir(t)
	project := t.TempDir()
	copyTree(t, filepath.Join(corpus, "claude", "agents"), filepath.Join(project, ".claude", "agents"))
	copyTree(t, filepath.Join(corpus, "gemini", "agents"), filepath.Join(project, ".gemini", "agents"))
	copyTree(t, filepath.Join(corpus, "codex"), filepath.Join(project, ".codex"))
	copyTree(t, filepath.Join(corpus, "opencode", "agents"), filepath.Join(project, ".opencode", "agent"))
	broken := filepath.Join(project, ".claude", "agents", "zz-broken.md")
	writeFile(t, broken, "---\nname: zz-broken\ndescription: d\nisolation: container\n---\n")

	set, err := Load(t.Context(), Options{ProjectDir: project})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*Definition{}
	for _, e := range set.List().Agents {
		if e.Path != "" {
			byPath[e.Path] = e.Definition
		}
	}

	// Every agent file of the corpus produced a definition.
	var files []string
	for _, dir := range []string{".claude/agents", ".gemini/agents", ".codex/agents", ".opencode/agent"} {
		filepath.WalkDir(filepath.Join(project, dir), func(path string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && path != broken && (strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".toml")) {
				files = append(files, path)
			}
			return nil
		})
	}
	if len(files) < 50 {
		t.Fatalf("found only %d corpus agent files; is the corpus complete?", len(files))
	}
	for _, f := range files {
		d := byPath[f]
		if d == nil {
			t.Errorf("%s: not loaded", mustRel(t, project, f))
			continue
		}
		if d.Name == "" || d.Description == "" {
			t.Errorf("%s: name %q, description %q", mustRel(t, project, f), d.Name, d.Description)
		}
		if d.Format == FormatGemini || d.Format == FormatOpencode {
			for _, tool := range slices.Concat(d.Tools, d.DisallowedTools) {
				if tool != "*" && strings.ToLower(tool) == tool {
					t.Errorf("%s: tool %q was not mapped to a keel name", mustRel(t, project, f), tool)
				}
			}
		}
	}
	t.Logf("%d corpus files loaded, %d diagnostics", len(files), len(set.Diagnostics()))

	// The broken file's error, and nothing else is an error.
	want := []string{`error: ` + broken + `:4: isolation "container" is not one of worktree`}
	if diff := cmp.Diff(want, render(set.Errors())); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}

	// The files whose frontmatter is not valid YAML are recovered with a warning.
	for _, name := range []string{"cohort-analysis", "silent-failure-hunter", "code-quality-reviewer"} {
		d, ok := set.Get(name)
		if !ok || !strings.Contains(d.Description, ": ") {
			t.Errorf("%s: not recovered with its whole description: %+v", name, d)
			continue
		}
		if !slices.ContainsFunc(set.Diagnostics(), func(x Diagnostic) bool {
			return x.Path == d.Path && strings.Contains(x.Message, "not valid YAML")
		}) {
			t.Errorf("%s: no warning about invalid YAML", name)
		}
	}

	// Spot checks of each mapping, against what the files say.
	check := func(name string, got, want any) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
		}
	}
	get := func(name string) *Definition {
		t.Helper()
		for _, d := range byPath {
			if d.Name == name {
				return d
			}
		}
		t.Fatalf("agent %s not loaded", name)
		return nil
	}
	check("cohort-analysis tools", get("cohort-analysis").Tools, []string{"Read", "Grep", "Glob", "WebFetch", "WebSearch"})
	check("pr-test-analyzer tools", get("pr-test-analyzer").Tools, []string{"Read", "Grep", "Glob", "Bash"})
	check("arm-cortex-expert tools", get("arm-cortex-expert").Tools, []string{})
	check("backend architect tools", get("backend-development-backend-architect").Tools, []string(nil))
	check("gallery-researcher tools", get("gallery-researcher").Tools, []string{"mcp__meigen__search_gallery", "mcp__meigen__get_inspiration"})
	check("development-workflows tools", get("development-workflows-research-agent").Tools,
		[]string{"Bash(*)", "Read", "Write", "Edit", "Glob", "Grep", "WebFetch(*)", "WebSearch(*)", "Agent", "NotebookEdit", "mcp__*"})
	check("document-specialist disallowed", get("document-specialist").DisallowedTools, []string{"Write", "Edit"})
	weather := get("weather-agent")
	check("weather-agent", []any{weather.PermissionMode, weather.MaxTurns, weather.Memory, weather.Skills, weather.Hooks != nil},
		[]any{ModeAcceptEdits, 5, MemoryProject, []string{"weather-fetcher"}, true})
	check("gsd-ai-researcher color", get("gsd-ai-researcher").Color, "#34D399")
	check("fable model", get("fable").Model, "fable")
	check("recruiter name", get("recruiter").Name, "recruiter")
	check("gemini debugger tools", get("debugger").Tools, []string{"Read", "Write", "Edit", "Bash", "Glob", "Grep"})
	check("gemini implementer tools", get("implementer").Tools, []string{"*"})
	check("gemini security-reviewer tools", get("security-reviewer").Tools, []string{"Read", "Glob", "Grep"})
	codeMapper := get("code-mapper")
	check("codex code-mapper", []any{codeMapper.Tools, codeMapper.Effort, codeMapper.Model}, []any{readOnlyTools, Effort{Level: "medium"}, "gpt-5.3-codex-spark"})
	check("codex docs_researcher description", get("docs_researcher").Description, "Documentation specialist that verifies APIs, framework behavior, and release notes.")
	check("codex browser-debugger mcp", get("browser-debugger").MCPServers[0].Name, "chrome_devtools")
	reviewer := get("subagents/code/reviewer")
	check("opencode reviewer disallowed", reviewer.DisallowedTools, []string{"Bash", "Edit", "Write"})
	check("opencode reviewer deny rules", reviewer.Permissions.Deny, []string{"Bash", "Edit(**/*)"})
	check("opencode simple-responder disallowed", get("subagents/test/simple-responder").DisallowedTools,
		[]string{"Bash", "Edit", "Glob", "Grep", "Read", "Agent", "Write"})
}
