package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/skill"
)

// loaderLocations are the project-relative folders and files keel's loaders read as project
// configuration that runs code or grants permissions, as each loader says: agent definitions
// (hooks, MCP servers; the other harnesses' folders too), skills and commands (allowed-tools,
// ! lines), settings (hooks, rules) and MCP servers. A new loader of such configuration adds
// its list here. Memory files (KEEL.md, CLAUDE.md, AGENTS.md) are not among them: they are
// instructions, read by the model like any file of the project (see projectconfig.go).
func loaderLocations() map[string][]string {
	return map[string][]string{
		"agentdef": agentdef.ProjectDirs(),
		"skill":    skill.ProjectDirs(),
		"settings": settings.ProjectFiles(),
		"mcphost":  {mcphost.ProjectFile},
	}
}

// TestPolicyProtectsEveryLoaderLocation: every folder or file a loader reads in a project is
// read-only at a writable root (present or not), below it where the search finds one, and in
// each directory between a writable root and a working directory inside it (absent); so are
// Claude Code's sandbox's other dangerous names at the root.
func TestPolicyProtectsEveryLoaderLocation(t *testing.T) {
	locs := loaderLocations()
	for name, l := range locs {
		if len(l) == 0 {
			t.Fatalf("the %s loader lists no project location", name)
		}
	}
	for _, want := range []string{".gemini/agents", ".opencode/agent", ".codex", ".claude/agents", ".keel/agents"} {
		if !slices.Contains(locs["agentdef"], filepath.FromSlash(want)) {
			t.Errorf("agentdef.ProjectDirs() = %v lacks %s", locs["agentdef"], want)
		}
	}
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	outer, _ := filepath.EvalSymlinks(t.TempDir())
	cwd := filepath.Join(outer, "a", "b")
	nested := filepath.Join(ws, "pkg", "deep")
	for _, l := range locs {
		for _, rel := range l {
			// Made in part only: the search finds the folder (or file) at its top.
			top := strings.Split(rel, string(filepath.Separator))[0]
			if top == rel && strings.HasSuffix(rel, ".json") {
				write(t, filepath.Join(nested, rel), "{}\n")
			} else if err := os.MkdirAll(filepath.Join(nested, top), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	sb := &settings.Sandbox{}
	sb.Filesystem.AllowWrite = vals(outer)
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: sb, Dirs: []string{cwd, ws}}).Complete()
	for name, l := range locs {
		for _, rel := range l {
			for _, dir := range []string{ws, nested, outer, filepath.Join(outer, "a"), cwd} {
				for _, path := range []string{filepath.Join(dir, rel), filepath.Join(dir, rel, "x.md")} {
					if p.WritableAt(path) {
						t.Errorf("%s (read by the %s loader) is writable inside the sandbox", path, name)
					}
				}
			}
		}
	}
	// The other agents' and editors' project configuration, which starts programs on the host
	// (MCP and language servers, tasks, a dev container's initializeCommand): at the root and
	// between it and the working directory, absent.
	editors := []string{".vscode/settings.json", ".idea/workspace.xml", ".cursor/mcp.json", ".windsurf/rules.md",
		".zed/settings.json", ".devcontainer/devcontainer.json", ".devcontainer.json", ".continue/mcpServers/x.yaml",
		".roo/mcp.json", ".kiro/settings/mcp.json", ".amazonq/mcp.json", ".junie/mcp/mcp.json", ".crush/crush.json",
		".crush.json", "crush.json", ".helix/languages.toml"}
	for _, n := range append(editors, ".ripgreprc", ".gitconfig", ".gitmodules",
		".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".gemini/settings.json", ".opencode/opencode.json") {
		if p.WritableAt(filepath.Join(ws, n)) {
			t.Errorf("%s at a writable root's top is writable", n)
		}
	}
	for _, n := range editors {
		if path := filepath.Join(outer, "a", n); p.WritableAt(path) {
			t.Errorf("%s, between a writable root and the working directory, is writable", path)
		}
	}
	// Only the configuration: the rest of the tree stays writable.
	for _, path := range []string{filepath.Join(nested, "main.go"), filepath.Join(cwd, "src", "x.go"), filepath.Join(outer, "a", "notes.md"),
		filepath.Join(ws, "CLAUDE.md"), filepath.Join(ws, "AGENTS.md"), filepath.Join(nested, "KEEL.md")} {
		if !p.WritableAt(path) {
			t.Errorf("%s is read-only: %s", path, p.Why(path))
		}
	}
}

// TestPolicyMasksKeelCredentials: the MCP servers' OAuth tokens and the copies of files keel
// keeps under its home are masked; its settings and the sessions' folders (where each
// command's shell reports its directory) are not.
func TestPolicyMasksKeelCredentials(t *testing.T) {
	keelHome := filepath.Join(t.TempDir(), "keel")
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{t.TempDir()}, KeelHome: keelHome}).Complete()
	for _, n := range []string{"mcp-auth/x.json", "mcp-auth/x.secret", "file-history/s/f@v1", "shadow/p.git/objects"} {
		if !p.MaskedAt(filepath.Join(keelHome, n)) {
			t.Errorf("$KEEL_HOME/%s is readable inside the sandbox", n)
		}
	}
	for _, n := range []string{"settings.json", "projects/p/s/tmp/cwd", "plugins/x/bin/tool", "sandbox/caches"} {
		if p.MaskedAt(filepath.Join(keelHome, n)) {
			t.Errorf("$KEEL_HOME/%s is masked: %s", n, p.Why(filepath.Join(keelHome, n)))
		}
	}
}
