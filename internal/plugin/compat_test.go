package plugin

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/compattest"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/skill"
)

// contributes is what one corpus plugin brings, as the session's loaders see it.
type contributes struct {
	agents, commands, skills, events, styles, mcp []string
}

// corpusPlugins lists every plugin folder of shared/compat/claude/plugins with what it must
// contribute. Names are namespaced by the plugin, as Claude Code does.
var corpusPlugins = map[string]contributes{
	"KingInYellows__yellow-plugins/yellow-research": {
		agents:   []string{"yellow-research:code-researcher", "yellow-research:research-conductor"},
		commands: []string{"yellow-research:flow:deepen-plan", "yellow-research:research:code", "yellow-research:research:deep", "yellow-research:research:setup"},
		skills:   []string{"yellow-research:library-context", "yellow-research:research-patterns"},
		events:   []string{"SessionStart"},
		styles:   []string{"yellow-research:research-brief"},
		mcp: []string{"plugin_yellow-research_ast-grep stdio uvx", "plugin_yellow-research_ceramic http https://mcp.ceramic.ai/mcp",
			"plugin_yellow-research_deepwiki http https://mcp.deepwiki.com/mcp", "plugin_yellow-research_exa stdio ROOT/bin/start-exa.sh",
			"plugin_yellow-research_parallel http https://task-mcp.parallel.ai/mcp", "plugin_yellow-research_perplexity stdio ROOT/bin/start-perplexity.sh",
			"plugin_yellow-research_tavily stdio ROOT/bin/start-tavily.sh"},
	},
	"anthropics__claude-plugins-official/discord": {
		skills: []string{"discord:access", "discord:configure"},
		mcp:    []string{"plugin_discord_discord stdio bun run --cwd ROOT --shell=bun --silent start"},
	},
	"anthropics__claude-plugins-official/example-plugin": {
		// A command and a skill are both called example-command: the skill wins, as in Claude Code.
		skills: []string{"example-plugin:example-command", "example-plugin:example-skill"},
		mcp:    []string{"plugin_example-plugin_example-server http https://mcp.example.com/api"},
	},
	"anthropics__claude-plugins-official/explanatory-output-style": {events: []string{"SessionStart"}},
	"anthropics__claude-plugins-official/feature-dev": {
		agents:   []string{"feature-dev:code-architect", "feature-dev:code-explorer", "feature-dev:code-reviewer"},
		commands: []string{"feature-dev:feature-dev"},
	},
	"anthropics__claude-plugins-official/gopls-lsp": {}, // its server is in the marketplace entry
	"anthropics__claude-plugins-official/hookify": {
		agents:   []string{"hookify:conversation-analyzer"},
		commands: []string{"hookify:configure", "hookify:help", "hookify:hookify", "hookify:list"},
		skills:   []string{"hookify:writing-hookify-rules"},
		events:   []string{"PreToolUse", "PostToolUse", "Stop", "UserPromptSubmit"},
	},
	"anthropics__claude-plugins-official/ralph-loop": {
		commands: []string{"ralph-loop:cancel-ralph", "ralph-loop:help", "ralph-loop:ralph-loop"},
		events:   []string{"Stop"},
	},
	"anthropics__claude-plugins-official/security-guidance": {events: []string{"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"}},
	"anthropics__claude-plugins-official/session-report":    {skills: []string{"session-report:session-report"}},
	"jpicklyk__task-orchestrator/task-orchestrator": {
		skills: []string{"task-orchestrator:adopt-project-scope", "task-orchestrator:batch-complete", "task-orchestrator:configure-server",
			"task-orchestrator:create-item", "task-orchestrator:dependency-manager", "task-orchestrator:manage-schemas",
			"task-orchestrator:post-plan-workflow", "task-orchestrator:pre-plan-workflow", "task-orchestrator:quick-start",
			"task-orchestrator:ralph", "task-orchestrator:review-proposals", "task-orchestrator:schema-workflow",
			"task-orchestrator:session-retrospective", "task-orchestrator:status-progression", "task-orchestrator:work-summary"},
		events: []string{"SessionStart", "FileChanged", "PreToolUse", "PostToolUse", "SubagentStart", "Stop"},
		// _fragments/ holds includes for the styles' generator, not styles.
		styles: []string{"task-orchestrator:ralph-iteration", "task-orchestrator:schema-orchestrator", "task-orchestrator:workflow-orchestrator"},
	},
	"laurigates__claude-plugins/hooks-plugin": {
		skills: []string{"hooks-plugin:hooks-configuration", "hooks-plugin:hooks-permission-request-hook",
			"hooks-plugin:hooks-session-end-issue-hook", "hooks-plugin:hooks-session-start-hook"},
		events: []string{"SessionStart", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "SubagentStop", "TaskCompleted", "SessionEnd"},
	},
	"obra__superpowers/superpowers": {
		skills: []string{"superpowers:brainstorming", "superpowers:dispatching-parallel-agents", "superpowers:executing-plans",
			"superpowers:finishing-a-development-branch", "superpowers:receiving-code-review", "superpowers:requesting-code-review",
			"superpowers:subagent-driven-development", "superpowers:systematic-debugging", "superpowers:test-driven-development",
			"superpowers:using-git-worktrees", "superpowers:using-superpowers", "superpowers:verification-before-completion",
			"superpowers:writing-plans", "superpowers:writing-skills"},
		events: []string{"SessionStart"}, // hooks.json only; hooks-cursor.json is Cursor's
	},
	"wshobson__agents/pptx-deck-creation": {
		// "./agents" is also the default folder, and the five declared skill folders are inside
		// skills/: nothing loads twice.
		agents: []string{"pptx-deck-creation:pptx-deck-creation-builder"},
		skills: []string{"pptx-deck-creation:pptx-deck-context", "pptx-deck-creation:pptx-quality-gates",
			"pptx-deck-creation:pptx-reference-deck-analysis", "pptx-deck-creation:pptx-slide-specification", "pptx-deck-creation:pptx-visual-assets"},
	},
}

// TestCorpusPlugins loads every plugin of the corpus unchanged and checks what each one
// contributes to a session. The irregularities the corpus README lists are reported (as the
// plugin's warnings, logged here), never a reason to drop anything.
func TestCorpusPlugins(t *testing.T) {
	dir := compattest.Dir(t, "claude", "plugins")
	folders, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	var seen []string
	for _, folder := range folders {
		rel, _ := filepath.Rel(dir, folder)
		rel = filepath.ToSlash(rel)
		seen = append(seen, rel)
		want, ok := corpusPlugins[rel]
		if !ok {
			t.Errorf("%s: a plugin the test does not know; add what it contributes to corpusPlugins", rel)
			continue
		}
		t.Run(rel, func(t *testing.T) {
			p := Load(Spec{Root: folder, DataRoot: "/data"})
			got := contributionsOf(t, p)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(contributes{})); diff != "" {
				t.Errorf("contributions mismatch (-want +got):\n%s", diff)
			}
			for _, e := range p.Errors {
				if e.Severity == SeverityError {
					t.Errorf("error loading a published plugin: %s", e.Error())
				} else {
					t.Logf("reported: %s", e.Error())
				}
			}
		})
	}
	for rel := range corpusPlugins {
		if !slices.Contains(seen, rel) {
			t.Errorf("%s is missing from the corpus", rel)
		}
	}
}

// contributionsOf runs the session's loaders over one plugin.
func contributionsOf(t *testing.T, p *Plugin) contributes {
	t.Helper()
	set := &Set{Plugins: []*Plugin{p}}
	var c contributes
	defs, err := agentdef.Load(t.Context(), agentdef.Options{Plugins: set.AgentSources()})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs.Agents() {
		if d.Source == agentdef.SourcePlugin {
			c.agents = append(c.agents, d.Name)
		}
	}
	for _, d := range defs.Errors() {
		t.Errorf("agent dropped: %s", d.Error())
	}
	cat, problems := skill.Load(skill.Options{Cwd: p.Root, NoBundled: true, NoProject: true, Plugins: set.SkillSources()})
	for _, s := range cat.All() {
		if s.Kind == skill.KindCommand {
			c.commands = append(c.commands, s.Name)
		} else {
			c.skills = append(c.skills, s.Name)
		}
	}
	for _, pb := range problems {
		if pb.Skipped {
			t.Errorf("command or skill dropped: %s", pb.Error())
		}
	}
	for _, g := range p.Hooks {
		if !slices.Contains(c.events, g.Event) {
			c.events = append(c.events, g.Event)
		}
		for _, h := range g.Hooks {
			if strings.Contains(h.Command, "${CLAUDE_PLUGIN_ROOT}") || strings.Contains(h.Command, "./hooks/run-hook.cmd") {
				t.Errorf("hook command not expanded (or Cursor's taken for Claude's): %s", h.Command)
			}
			if h.Command != "" && !slices.Contains(h.Env, "CLAUDE_PLUGIN_ROOT="+p.Root) {
				t.Errorf("hook %q runs without CLAUDE_PLUGIN_ROOT in its environment", h.Command)
			}
		}
	}
	if _, warnings := hooks.New(hooks.Config{Hooks: p.Hooks}); len(warnings) > 0 {
		for _, w := range warnings {
			t.Logf("reported: %s", w.Error())
		}
	}
	for _, s := range p.OutputStyles {
		c.styles = append(c.styles, s.Name)
	}
	servers, _ := p.MCPServers(map[string]string{})
	for _, s := range servers {
		target := strings.Join(append([]string{s.Command}, s.Args...), " ")
		if s.Type != "stdio" {
			target = s.URL
		}
		target = strings.ReplaceAll(target, p.Root, "ROOT")
		if s.Command == "uvx" {
			target = "uvx"
		}
		c.mcp = append(c.mcp, s.Name+" "+s.Type+" "+target)
	}
	return c
}

// The corpus shows ${CLAUDE_PLUGIN_ROOT} written every way; each expands where it runs.
func TestCorpusPluginRootExpansion(t *testing.T) {
	dir := compattest.Dir(t, "claude", "plugins")
	root := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }
	commands := func(rel string) []string {
		var out []string
		for _, g := range Load(Spec{Root: root(rel)}).Hooks {
			for _, h := range g.Hooks {
				out = append(out, h.Command)
			}
		}
		return out
	}
	sg := root("anthropics__claude-plugins-official/security-guidance")
	if got := commands("anthropics__claude-plugins-official/security-guidance")[1]; got != `bash "`+sg+`/hooks/sg-python.sh" "`+sg+`/hooks/security_reminder_hook.py"` {
		t.Errorf("twice in one command: %s", got)
	}
	sp := root("obra__superpowers/superpowers")
	if got := commands("obra__superpowers/superpowers"); !slices.Equal(got, []string{`"` + sp + `/hooks/run-hook.cmd" session-start`}) {
		t.Errorf("as the quoted program: %q", got)
	}
	to := root("jpicklyk__task-orchestrator/task-orchestrator")
	if got := commands("jpicklyk__task-orchestrator/task-orchestrator")[0]; got != "node "+to+"/hooks/session-start.mjs" {
		t.Errorf("unquoted: %s", got)
	}
	// Inside a permission rule in command frontmatter.
	rl := root("anthropics__claude-plugins-official/ralph-loop")
	set := &Set{Plugins: []*Plugin{Load(Spec{Root: rl})}}
	cat, _ := skill.Load(skill.Options{Cwd: rl, NoBundled: true, NoProject: true, Plugins: set.SkillSources()})
	loop, ok := cat.Lookup("ralph-loop:ralph-loop")
	if !ok || !slices.Contains(loop.AllowedTools, "Bash("+rl+"/scripts/setup-ralph-loop.sh:*)") {
		t.Errorf("allowed-tools of /ralph-loop:ralph-loop = %q", loop.AllowedTools)
	}
}

// corpusMarketplaces are the catalogues with their entry counts by source type.
var corpusMarketplaces = map[string]struct {
	name        string
	bySource    map[string]int
	strictFalse int
}{
	"marketplaces/anthropics__claude-plugins-official": {"claude-plugins-official", map[string]int{"git-subdir": 83, "path": 53, "url": 150}, 15},
	"marketplaces/wshobson__agents":                    {"claude-code-workflows", map[string]int{"git-subdir": 1, "path": 91}, 0},
	"marketplaces/laurigates__claude-plugins":          {"laurigates-claude-plugins", map[string]int{"path": 44}, 0},
	"marketplaces/KingInYellows__yellow-plugins":       {"yellow-plugins", map[string]int{"path": 19}, 0},
	"plugins/obra__superpowers/superpowers":            {"superpowers-dev", map[string]int{"path": 1}, 0},
}

// TestCorpusMarketplaces parses every catalogue unchanged: every entry is kept with its source.
// Their relative sources point into repositories the corpus does not hold, so validating
// reports those as missing folders.
func TestCorpusMarketplaces(t *testing.T) {
	dir := compattest.Dir(t, "claude")
	for rel, want := range corpusMarketplaces {
		t.Run(rel, func(t *testing.T) {
			m, err := ReadMarketplace(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			by, strictFalse := map[string]int{}, 0
			for _, e := range m.Entries {
				by[e.Source.Type]++
				if !e.Strict {
					strictFalse++
				}
			}
			if m.Name != want.name || strictFalse != want.strictFalse {
				t.Errorf("name %q, strict: false entries %d; want %q, %d", m.Name, strictFalse, want.name, want.strictFalse)
			}
			if diff := cmp.Diff(want.bySource, by); diff != "" {
				t.Errorf("entries by source mismatch (-want +got):\n%s", diff)
			}
			for _, e := range m.Errors {
				t.Errorf("catalogue problem: %s", e.Error())
			}
		})
	}
}

// A strict: false entry is the plugin's manifest: the official gopls-lsp plugin has no
// manifest and no components, and its language server comes from its entry.
func TestCorpusStrictFalseEntry(t *testing.T) {
	dir := compattest.Dir(t, "claude")
	m, err := ReadMarketplace(filepath.Join(dir, "marketplaces", "anthropics__claude-plugins-official"))
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.Entry("gopls-lsp")
	if !ok || e.Strict {
		t.Fatalf("gopls-lsp entry: %v, strict %v", ok, e != nil && e.Strict)
	}
	p := Load(Spec{Root: filepath.Join(dir, "plugins", "anthropics__claude-plugins-official", "gopls-lsp"), Name: e.Name, Marketplace: m.Name, Entry: e})
	if p.Name != "gopls-lsp" || p.ID != "gopls-lsp@claude-plugins-official" || p.HasManifest {
		t.Errorf("plugin %s (%s), manifest %v", p.Name, p.ID, p.HasManifest)
	}
	if len(p.LSP) != 1 || p.LSP[0].Name != "plugin:gopls-lsp:gopls" || p.LSP[0].Server.V.Command != "gopls" || p.LSP[0].Server.V.ExtensionToLanguage[".go"] != "go" {
		t.Errorf("language servers = %+v", p.LSP)
	}
	if p.LSP[0].Server.From.Path == "" || !strings.HasSuffix(p.LSP[0].Server.From.Path, "marketplace.json (plugins/"+strconv.Itoa(e.index)+"/lspServers)") {
		t.Errorf("the server's origin names the catalogue entry: %q", p.LSP[0].Server.From.Path)
	}
	for _, err := range p.Errors {
		t.Errorf("problem: %s", err.Error())
	}
}

// TestCorpusValidate runs the validator over every plugin; a published plugin has no errors.
func TestCorpusValidate(t *testing.T) {
	dir := compattest.Dir(t, "claude", "plugins")
	folders, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	for _, folder := range folders {
		reports, err := Validate(t.Context(), folder)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			if !r.OK() {
				var b strings.Builder
				WriteText(&b, []Report{r})
				t.Errorf("%s does not validate:\n%s", folder, b.String())
			}
		}
	}
}
