package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/skill"
)

// TestExternalMarketplaces loads real marketplaces that are not in this repository (a checkout
// of anthropics/claude-plugins-official, wshobson/agents, …), named by
// KEEL_EXTERNAL_MARKETPLACES (folders separated by the path-list separator). Every plugin with
// a source inside its marketplace is installed as a user would, and the whole set loaded as a
// session would: no plugin may fail to install or lose a component; the problems found are
// reported, with their counts.
func TestExternalMarketplaces(t *testing.T) {
	roots := os.Getenv("KEEL_EXTERNAL_MARKETPLACES")
	if roots == "" {
		t.Skip("KEEL_EXTERNAL_MARKETPLACES is not set: no external marketplaces to load")
	}
	for _, root := range filepath.SplitList(roots) {
		t.Run(filepath.Base(root), func(t *testing.T) {
			m := &Manager{Home: t.TempDir(), Confirm: func(ConsentRequest) (bool, error) { return true, nil }}
			cat, err := m.AddMarketplace(t.Context(), root)
			if err != nil {
				t.Fatal(err)
			}
			installed, skipped := 0, map[string]int{}
			for _, e := range cat.Entries {
				if e.Source.Type != SourcePath {
					skipped[e.Source.Type]++
					continue
				}
				if _, err := m.Install(t.Context(), e.Name+"@"+cat.Name); err != nil {
					t.Errorf("install %s: %v", e.Name, err)
					continue
				}
				installed++
			}
			set := LoadSet(t.Context(), SetOptions{Home: m.Home})
			defs, err := agentdef.Load(t.Context(), agentdef.Options{Plugins: set.AgentSources()})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range defs.Errors() {
				t.Errorf("agent dropped: %s", d.Error())
			}
			agents := 0
			for _, d := range defs.Agents() {
				if d.Source == agentdef.SourcePlugin {
					agents++
				}
			}
			cat2, problems := skill.Load(skill.Options{Cwd: m.Home, NoBundled: true, NoProject: true, Plugins: set.SkillSources()})
			for _, p := range problems {
				if p.Skipped {
					t.Errorf("command or skill dropped: %s", p.Error())
				}
			}
			bySeverity := map[Severity]int{}
			for _, e := range set.Errors() {
				bySeverity[e.Severity]++
				t.Logf("%s: %s", e.Severity, e.Error())
			}
			hooks := 0
			for _, g := range set.Hooks() {
				hooks += len(g.Hooks)
			}
			t.Logf("%s: %d entries, %d installed from the marketplace's own folder (remote sources not fetched: %v); "+
				"%d plugins loaded: %d agents, %d commands and skills, %d hooks, %d MCP servers, %d language servers; "+
				"%d errors and %d warnings reported",
				cat.Name, len(cat.Entries), installed, skipped, len(set.Plugins), agents, len(cat2.All()), hooks,
				len(set.MCPServers()), len(set.LSPServers()), bySeverity[SeverityError], bySeverity[SeverityWarning])
			if len(set.Plugins) != installed {
				t.Errorf("%d installed, %d loaded", installed, len(set.Plugins))
			}
			if installed == 0 && !strings.Contains(root, "empty") {
				t.Error("nothing installed")
			}
		})
	}
}
