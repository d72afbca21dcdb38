package agentdef

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func agentMD(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\nPrompt of " + desc + ".\n"
}

func TestLoadPrecedence(t *testing.T) {
	root := t.TempDir()
	home, project, managed, plugin := filepath.Join(root, "home"), filepath.Join(root, "project"), filepath.Join(root, "managed"), filepath.Join(root, "plugin")
	writeFile(t, filepath.Join(home, ".claude/agents/a.md"), agentMD("a", "user claude"))
	writeFile(t, filepath.Join(home, ".keel/agents/a.md"), agentMD("a", "user keel"))
	writeFile(t, filepath.Join(project, ".opencode/agent/a.md"), "---\ndescription: project opencode\n---\n")
	writeFile(t, filepath.Join(project, ".codex/agents/a.toml"), "name = \"a\"\ndescription = \"project codex\"\ndeveloper_instructions = \"x\"\n")
	writeFile(t, filepath.Join(project, ".gemini/agents/a.md"), agentMD("a", "project gemini"))
	writeFile(t, filepath.Join(project, ".claude/agents/sub/a.md"), agentMD("a", "project claude"))
	writeFile(t, filepath.Join(project, ".keel/agents/a.md"), agentMD("a", "project keel"))
	writeFile(t, filepath.Join(project, ".keel/agents/general-purpose.md"), agentMD("general-purpose", "project's own"))
	writeFile(t, filepath.Join(managed, "a.md"), agentMD("a", "managed"))
	writeFile(t, filepath.Join(plugin, "a.md"), agentMD("a", "plugin"))
	writeFile(t, filepath.Join(plugin, "Explore.md"), agentMD("Explore", "plugin explore"))

	set, err := Load(t.Context(), Options{
		ProjectDir: project,
		HomeDir:    home,
		Plugins:    []Plugin{{Name: "plug", Dir: plugin}},
		CLIAgents:  `{"a": {"description": "cli", "prompt": "p"}}`,
		ManagedDir: managed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if diags := set.Diagnostics(); len(diags) > 0 {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}

	type row struct {
		Name, Description string
		Active            bool
		Overrides         []string
		OverriddenBy      string
	}
	label := func(r Ref) string { return string(r.Source) + "/" + string(r.Format) }
	var got []row
	for _, e := range set.List().Agents {
		r := row{Name: e.Name, Description: e.Description, Active: e.Active}
		for _, o := range e.Overrides {
			r.Overrides = append(r.Overrides, label(o))
		}
		if e.OverriddenBy != nil {
			r.OverriddenBy = label(*e.OverriddenBy)
		}
		got = append(got, r)
	}
	builtinGP := Builtins()[0].Description
	want := []row{
		{Name: "general-purpose", Description: "project's own", Active: true, Overrides: []string{"built-in/keel"}},
		{Name: "general-purpose", Description: builtinGP, OverriddenBy: "project/keel"},
		{Name: "Explore", Description: Builtins()[1].Description, Active: true},
		{Name: "Plan", Description: Builtins()[2].Description, Active: true},
		{Name: "verification", Description: Builtins()[3].Description, Active: true},
		{Name: "a", Description: "managed", Active: true, Overrides: []string{
			"cli/keel", "project/keel", "project/keel", "project/gemini", "project/codex", "project/opencode", "user/keel", "user/keel",
		}},
		{Name: "a", Description: "cli", OverriddenBy: "managed/keel"},
		{Name: "a", Description: "project keel", OverriddenBy: "managed/keel"},
		{Name: "a", Description: "project claude", OverriddenBy: "managed/keel"},
		{Name: "a", Description: "project gemini", OverriddenBy: "managed/keel"},
		{Name: "a", Description: "project codex", OverriddenBy: "managed/keel"},
		{Name: "a", Description: "project opencode", OverriddenBy: "managed/keel"},
		{Name: "a", Description: "user keel", OverriddenBy: "managed/keel"},
		{Name: "a", Description: "user claude", OverriddenBy: "managed/keel"},
		{Name: "plug:a", Description: "plugin", Active: true},
		{Name: "plug:Explore", Description: "plugin explore", Active: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if d, ok := set.Get("a"); !ok || d.Source != SourceManaged {
		t.Errorf("Get(a) = %+v, %v; want the managed definition", d, ok)
	}
	if _, ok := set.Get("A"); ok {
		t.Errorf("Get matched a name of different case")
	}
}

// TestLoadProjectOrder checks the order inside the project source without the sources above
// it: .keel beats .claude beats .gemini beats .codex beats .opencode.
func TestLoadProjectOrder(t *testing.T) {
	dirs := []struct{ path, content, desc string }{
		{".keel/agents/x.md", agentMD("x", "keel"), "keel"},
		{".claude/agents/x.md", agentMD("x", "claude"), "claude"},
		{".gemini/agents/x.md", agentMD("x", "gemini"), "gemini"},
		{".codex/agents/x.toml", "name = \"x\"\ndescription = \"codex\"\n", "codex"},
		{".opencode/agents/x.md", "---\ndescription: opencode\n---\n", "opencode"},
	}
	for i := range dirs {
		project := t.TempDir()
		for _, d := range dirs[i:] {
			writeFile(t, filepath.Join(project, d.path), d.content)
		}
		set, err := Load(t.Context(), Options{ProjectDir: project})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := set.Get("x")
		if got == nil || got.Description != dirs[i].desc {
			t.Errorf("with %s and below: got %+v, want the %s definition (diagnostics %v)", dirs[i].path, got, dirs[i].desc, set.Diagnostics())
		}
	}
}

func TestLoadNoCompat(t *testing.T) {
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".claude/agents/c.md"), agentMD("c", "claude"))
	writeFile(t, filepath.Join(project, ".keel/agents/k.md"), agentMD("k", "keel"))
	set, err := Load(t.Context(), Options{ProjectDir: project, NoCompat: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Get("c"); ok {
		t.Error(".claude was read with NoCompat")
	}
	if _, ok := set.Get("k"); !ok {
		t.Error(".keel was not read")
	}
}

func TestLoadBadFilesDoNotHideGoodOnes(t *testing.T) {
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".keel/agents/good.md"), agentMD("good", "fine"))
	writeFile(t, filepath.Join(project, ".keel/agents/bad.md"), "---\nname: bad\ndescription: d\nmemory: team\n---\n")
	writeFile(t, filepath.Join(project, ".keel/agents/README.md"), "# notes\n")
	writeFile(t, filepath.Join(project, ".keel/agents/odd.json"), "{\"name\": \"odd\",")
	writeFile(t, filepath.Join(project, ".codex/config.toml"), "[agents.missing]\ndescription = \"m\"\nconfig_file = \"agents/none.toml\"\n")
	set, err := Load(t.Context(), Options{ProjectDir: project, CLIAgents: `{"cli": {"description": "from flag", "prompt": "p"}}`})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"good", "cli", "general-purpose"} {
		if _, ok := set.Get(name); !ok {
			t.Errorf("%s missing", name)
		}
	}
	var got []string
	for _, d := range set.Diagnostics() {
		rel, _ := filepath.Rel(project, d.Path)
		d.Path = filepath.ToSlash(rel)
		got = append(got, string(d.Severity)+": "+d.Error())
	}
	want := []string{
		"error: .codex/config.toml:1: agents.missing: config_file: open " + filepath.Join(project, ".codex/agents/none.toml") + ": no such file or directory",
		"warning: .keel/agents/README.md:1: no frontmatter (a first line of ---); not an agent definition, skipped",
		`error: .keel/agents/bad.md:4: memory "team" is not one of user, project, local`,
		"error: .keel/agents/odd.json:1: invalid JSON: unexpected end of input",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if n := len(set.Errors()); n != 3 {
		t.Errorf("Errors() = %d diagnostics, want 3", n)
	}
}

func TestLoadCanceled(t *testing.T) {
	project := t.TempDir()
	writeFile(t, filepath.Join(project, ".keel/agents/a.md"), agentMD("a", "x"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Load(ctx, Options{ProjectDir: project}); err == nil {
		t.Fatal("Load with a canceled context returned no error")
	}
}

// A plugin that names its agent files one by one loads just those, namespaced and marked with
// the plugin; a folder loads all of it.
func TestLoadPluginFilesAndFolders(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "agents/one.md"), agentMD("one", "first"))
	writeFile(t, filepath.Join(root, "agents/two.md"), agentMD("two", "second"))
	writeFile(t, filepath.Join(root, "more/three.md"), agentMD("three", "third"))
	set, err := Load(t.Context(), Options{Plugins: []Plugin{
		{Name: "p", Dir: filepath.Join(root, "agents/two.md")},
		{Name: "q", Dir: filepath.Join(root, "more")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range set.Agents() {
		if d.Source == SourcePlugin {
			got = append(got, d.Name+"@"+d.Plugin)
		}
	}
	if diff := cmp.Diff([]string{"p:two@p", "q:three@q"}, got); diff != "" {
		t.Errorf("plugin agents mismatch (-want +got):\n%s", diff)
	}
	var out strings.Builder
	if err := set.List().WriteText(&out, root, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "p:two") || !strings.Contains(out.String(), "plugin (p)") {
		t.Errorf("listing does not show the plugin origin:\n%s", out.String())
	}
}

func TestSetReplace(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.md"), agentMD("a", "from the plugin"))
	with, err := Load(t.Context(), Options{Plugins: []Plugin{{Name: "p", Dir: root}}})
	if err != nil {
		t.Fatal(err)
	}
	without, _ := Load(t.Context(), Options{})
	held := with // what a subagent runner holds
	held.Replace(without)
	if _, ok := held.Get("p:a"); ok {
		t.Error("p:a is still active after Replace")
	}
	if len(held.List().Agents) != len(without.List().Agents) {
		t.Error("the listing kept the old definitions")
	}
}
