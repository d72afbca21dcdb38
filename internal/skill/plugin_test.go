package skill

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPluginEntries(t *testing.T) {
	l := newLayout(t)
	plug := filepath.Join(t.TempDir(), "plug")
	write(t, plug, "commands/greet.md", "---\ndescription: Greets.\nallowed-tools: [\"Bash(${CLAUDE_PLUGIN_ROOT}/bin/hi:*)\"]\n---\nRun ${CLAUDE_PLUGIN_ROOT}/bin/hi for $ARGUMENTS; keep state in ${CLAUDE_PLUGIN_DATA}.\n")
	write(t, plug, "commands/research/code.md", "---\ndescription: Researches code.\n---\nResearch $1.\n")
	write(t, plug, "commands/both.md", "---\ndescription: The command.\n---\ncommand body\n")
	write(t, plug, "skills/both/SKILL.md", skillFile("both", "The skill.", "skill body"))
	write(t, plug, "skills/writing/SKILL.md", skillFile("writing-rules", "Writes rules.", "rules body"))
	write(t, plug, "extra/single.md", "---\ndescription: One named file.\n---\nsingle\n")
	other := filepath.Join(t.TempDir(), "other")
	write(t, other, "commands/greet.md", "---\ndescription: Greets too.\n---\nother greet\n")
	write(t, l.keelHome, "commands/mine.md", "---\ndescription: Mine.\n---\nmine\n")

	p := Plugin{Name: "plug", Root: plug, DataDir: "/data/plug",
		Commands: []string{filepath.Join(plug, "commands"), filepath.Join(plug, "extra/single.md")},
		// The skill folder named on its own is also inside skills/: it loads once.
		Skills: []string{filepath.Join(plug, "skills"), filepath.Join(plug, "skills/writing")}}
	cat, problems := l.load(t, func(o *Options) {
		o.Plugins = []Plugin{p, {Name: "other", Root: other, Commands: []string{filepath.Join(other, "commands")}}}
	})
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	var got []string
	for _, s := range cat.All() {
		got = append(got, s.Name+" "+string(s.Kind)+" "+string(s.Source)+" "+s.Plugin)
	}
	want := []string{
		"mine command user ",
		"other:greet command plugin other",
		"plug:both skill plugin plug",
		"plug:greet command plugin plug",
		"plug:research:code command plugin plug",
		"plug:single command plugin plug",
		"plug:writing-rules skill plugin plug",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries mismatch (-want +got):\n%s", diff)
	}
	greet, _ := cat.Lookup("plug:greet")
	if diff := cmp.Diff([]string{"Bash(" + plug + "/bin/hi:*)"}, greet.AllowedTools); diff != "" {
		t.Errorf("allowed-tools keep ${CLAUDE_PLUGIN_ROOT} (-want +got):\n%s", diff)
	}
	inv, ok, err := cat.Expand(t.Context(), "/plug:greet world")
	if err != nil || !ok {
		t.Fatalf("expand: %v %v", ok, err)
	}
	if want := "Run " + plug + "/bin/hi for world; keep state in /data/plug."; inv.Text != want {
		t.Errorf("body = %q, want %q", inv.Text, want)
	}
	// The bare name reaches a plugin's entry while only one plugin has it.
	if s, ok := cat.Lookup("/writing-rules"); !ok || s.Name != "plug:writing-rules" {
		t.Errorf("bare /writing-rules = %q %v", s.Name, ok)
	}
	if s, ok := cat.Lookup("greet"); ok {
		t.Errorf("bare greet is in two plugins but found %q", s.Name)
	}
	if _, _, err := cat.Expand(t.Context(), "/greet"); err == nil || !strings.Contains(err.Error(), "greet") {
		t.Errorf("an ambiguous bare name must be an error naming close matches: %v", err)
	}
	var listing strings.Builder
	if err := RenderText(&listing, cat.All(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(listing.String(), "plugin (plug)") {
		t.Errorf("keel skills does not show the plugin:\n%s", listing.String())
	}
}

// Replace swaps a catalog's entries in place, so the Skill tool and every other holder of the
// catalog see a disabled plugin's entries go.
func TestCatalogReplace(t *testing.T) {
	l := newLayout(t)
	plug := filepath.Join(t.TempDir(), "plug")
	write(t, plug, "commands/c.md", "---\ndescription: c\n---\nc")
	cat, _ := l.load(t, func(o *Options) {
		o.Plugins = []Plugin{{Name: "plug", Root: plug, Commands: []string{filepath.Join(plug, "commands")}}}
	})
	if _, ok := cat.Lookup("plug:c"); !ok {
		t.Fatal("plug:c not loaded")
	}
	without, _ := l.load(t)
	cat.Replace(without)
	if _, ok := cat.Lookup("plug:c"); ok {
		t.Error("plug:c is still there after Replace")
	}
	if _, _, err := cat.Expand(t.Context(), "/plug:c"); err == nil {
		t.Error("/plug:c still expands")
	}
}
