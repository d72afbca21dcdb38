package permission

import (
	"os"
	"path/filepath"
	"testing"
)

func TestProtectedPaths(t *testing.T) {
	dir := t.TempDir()
	hook := filepath.Join(dir, "scripts", "check.sh")
	userSettings := filepath.Join(t.TempDir(), "settings.json")
	protectedEdits := []string{".git/hooks/pre-commit", ".git/config", "sub/.git/config", ".keel/settings.json",
		".claude/settings.local.json", ".claude/agents/evil.md", ".claude/skills/x/SKILL.md", ".mcp.json", "sub/.mcp.json",
		".vscode/tasks.json", ".gitmodules", ".keel/worktrees/agent-1/.git", ".keel/worktrees/agent-1/.claude/settings.json", ".keel/worktrees", "scripts/check.sh", userSettings, ".git",
		".gemini/agents/helper.md", ".opencode/agent/helper.md", ".codex/config.toml", "sub/.opencode/agents/x.md",
		".cursor/mcp.json", "sub/.zed/settings.json", ".devcontainer/devcontainer.json", ".devcontainer.json", ".kiro/settings/mcp.json",
		".amazonq/mcp.json", ".continue/mcpServers/x.yaml", ".roo/mcp.json", ".junie/mcp/mcp.json", ".windsurf/x.md",
		".crush/crush.json", ".crush.json", "crush.json", ".helix/languages.toml"}
	plain := []string{"src/main.go", "docs/.gitignore", "git/config", "x.mcp.json", ".keel/worktrees/agent-1/src/a.go"}
	rules := func(texts ...string) []Rule { return mustRules(t, Allow, texts...) }
	tests := []struct {
		mode  Mode
		rules []Rule
		want  Behavior
		plain Behavior
	}{
		{ModeDefault, nil, Ask, Ask},
		{ModeAcceptEdits, nil, Ask, Allow},
		{ModeAcceptEdits, rules("Edit", "Write", "Edit(**)"), Ask, Allow},
		{ModeDontAsk, nil, Deny, Deny},
		{ModePlan, nil, Ask, Ask},
		{ModeBypassPermissions, nil, Allow, Allow},
	}
	for _, tt := range tests {
		c := New(Config{Policy: Policy{Mode: tt.mode, Rules: tt.rules, Dirs: []string{dir}, Protected: []string{hook, userSettings}}})
		for _, p := range protectedEdits {
			for _, tool := range []string{"Write", "Edit", "NotebookEdit"} {
				if d := c.Evaluate(Request{Tool: tool, Paths: []string{p}}); d.Behavior != tt.want {
					t.Errorf("%s %v: %s %s got %s (%s); want %s", tt.mode, tt.rules, tool, p, d.Behavior, d.Reason, tt.want)
				}
			}
		}
		for _, p := range plain {
			if d := c.Evaluate(Request{Tool: "Write", Paths: []string{p}}); d.Behavior != tt.plain {
				t.Errorf("%s: Write %s got %s (%s); want %s", tt.mode, p, d.Behavior, d.Reason, tt.plain)
			}
		}
	}
	// A rule that names the protected part covers it; deny beats bypass.
	c := New(Config{Policy: Policy{Mode: ModeDefault, Dirs: []string{dir}, Protected: []string{hook},
		Rules: append(rules("Edit(.claude/agents/**)", "Edit(./scripts/check.sh)"), mustRules(t, Deny, "Edit(.git/**)")...)}})
	for p, want := range map[string]Behavior{".claude/agents/a.md": Allow, ".claude/settings.json": Ask, "scripts/check.sh": Allow, ".git/config": Deny} {
		if d := c.Evaluate(Request{Tool: "Edit", Paths: []string{p}}); d.Behavior != want {
			t.Errorf("named rules: Edit %s got %s (%s); want %s", p, d.Behavior, d.Reason, want)
		}
	}
	bypass := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Dirs: []string{dir}, Rules: mustRules(t, Deny, "Edit(.git/**)")}})
	if d := bypass.Evaluate(Request{Tool: "Write", Paths: []string{".git/hooks/pre-commit"}}); d.Behavior != Deny {
		t.Errorf("bypass with deny: got %s; want deny", d.Behavior)
	}
	// An extra protected directory (keel's home) is covered by a rule pointing inside it.
	keelHome := filepath.Join(t.TempDir(), "keel")
	mem := filepath.Join(keelHome, "agent-memory", "rev")
	c = New(Config{Policy: Policy{Mode: ModeAcceptEdits, Dirs: []string{dir}, Protected: []string{keelHome},
		Rules: rules("Edit(//"+mem[1:]+"/**)", "Edit(//"+filepath.Dir(keelHome)[1:]+"/**)")}})
	for p, want := range map[string]Behavior{filepath.Join(mem, "MEMORY.md"): Allow, filepath.Join(keelHome, "trusted-projects.json"): Ask} {
		if d := c.Evaluate(Request{Tool: "Write", Paths: []string{p}}); d.Behavior != want {
			t.Errorf("keel home: Write %s got %s (%s); want %s", p, d.Behavior, d.Reason, want)
		}
	}
	// Reading is not protected.
	if d := c.Evaluate(Request{Tool: "Read", Paths: []string{".git/config"}}); d.Behavior != Allow {
		t.Errorf("Read .git/config: got %s (%s); want allow", d.Behavior, d.Reason)
	}
}

// TestNestedRepositoryIsProtected: a repository written file by file inside the project is
// as protected as .git — the write that completes it (HEAD, objects, refs all there) asks in
// acceptEdits, and so does any later write into it — so no `git status` there runs a
// config the model wrote. A file named HEAD in an ordinary directory is no repository.
func TestNestedRepositoryIsProtected(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := New(Config{Policy: Policy{Mode: ModeAcceptEdits, Dirs: []string{dir}}})
	write := func(rel string) Behavior {
		p := filepath.Join(dir, rel)
		d := c.Evaluate(Request{Tool: "Write", Paths: []string{p}, Cwd: dir})
		if d.Behavior == Allow {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d.Behavior
	}
	for _, step := range []struct {
		rel  string
		want Behavior
	}{
		{"b/HEAD", Allow},
		{"b/config", Allow},
		{"b/objects/info/packs", Allow},
		{"b/refs/heads/main", Ask}, // completes the repository
		{"notes/HEAD", Allow},
		{"notes/refs.txt", Allow},
	} {
		if got := write(step.rel); got != step.want {
			t.Errorf("write %s: got %s; want %s", step.rel, got, step.want)
		}
	}
	// Made by other means (a clone, a script), the repository's files ask all the same.
	for _, d := range []string{"c/objects", "c/refs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "c", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := write("c/config"); got != Ask {
		t.Errorf("write c/config into a repository: got %s; want ask", got)
	}
}
