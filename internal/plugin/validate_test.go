package plugin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Claude Code's `plugin validate` rules, as its manifest schema and documentation state them:
// only name is required and it has no spaces; author is an object with a name; component
// paths are relative and start with ./; a hooks, MCP or LSP path names a .json file; a
// marketplace has a name, an owner with a name and a plugins array; an entry's source is a
// ./path or a known source object, and a sha is a full commit id.
func TestValidatePlugin(t *testing.T) {
	root := writeTree(t, filepath.Join(t.TempDir(), "bad"), map[string]string{
		".claude-plugin/plugin.json": `{
  "version": "1.0.0",
  "author": {"email": "a@example.com"},
  "homepage": "not a url",
  "hooks": "./hooks/hooks.yaml",
  "keywords": "one"
}`,
		"hooks/hooks.yaml":  "x",
		"hooks/hooks.json":  `{"hooks": {"NoSuchEvent": [{"hooks": [{"type": "command", "command": "x"}]}]}, "extra": 1}`,
		"agents/broken.md":  "---\ndescription: no name\n---\n",
		"skills/s/SKILL.md": "---\nname: s\ndescription: [unclosed\n---\n",
	})
	reports, err := Validate(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Kind != "plugin" || reports[0].OK() {
		t.Fatalf("reports = %+v", reports)
	}
	var b strings.Builder
	WriteText(&b, reports)
	got := strings.ReplaceAll(b.String(), root+string(filepath.Separator), "")
	for _, want := range []string{
		"error: .claude-plugin/plugin.json:3: author has no name",
		"error: .claude-plugin/plugin.json:4: homepage \"not a url\" is not a URL",
		"error: .claude-plugin/plugin.json:6: keywords is a string, want an array of strings",
		"error: .claude-plugin/plugin.json:5: hooks \"./hooks/hooks.yaml\" is not a .json file",
		"warning: hooks/hooks.json:1: unknown key extra (ignored; the keys are description, hooks)",
		"warning: hooks/hooks.json:1: hooks.NoSuchEvent: keel does not fire this event",
		"error: agents/broken.md:",
		"skills/s/SKILL.md:",
		"Validation failed (",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestValidateMarketplace(t *testing.T) {
	root := writeTree(t, t.TempDir(), map[string]string{
		".claude-plugin/marketplace.json": `{
  "name": "my market",
  "owner": "me",
  "plugins": [
    {"name": "a", "source": "plugins/a"},
    {"name": "b", "source": {"source": "github", "repo": "o/r", "sha": "abc"}},
    {"name": "c", "source": {"source": "svn", "url": "x"}},
    {"name": "d", "source": "./plugins/d", "colour": "red"},
    {"name": "d", "source": "./plugins/d"},
    {"name": "e", "source": "./missing"}
  ]
}`,
		"plugins/d/.claude-plugin/plugin.json": `{"name": "d", "author": "x"}`,
	})
	reports, err := Validate(t.Context(), filepath.Join(root, ".claude-plugin", "marketplace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var walk func(r Report)
	walk = func(r Report) {
		for _, p := range r.Problems {
			got = append(got, string(p.Severity)+" "+strings.ReplaceAll(p.Error(), root+string(filepath.Separator), ""))
		}
		for _, sub := range r.Plugins {
			walk(sub)
		}
	}
	walk(reports[0])
	want := []string{
		`error .claude-plugin/marketplace.json:2: marketplace name "my market" contains spaces; use kebab-case (e.g. "my-plugin")`,
		`error .claude-plugin/marketplace.json:3: owner is a string without a name, want {"name": "…", "email": "…"}`,
		`error .claude-plugin/marketplace.json:5: plugin a: source "plugins/a" must be a path starting with ./ (or a bare name with metadata.pluginRoot set)`,
		`error .claude-plugin/marketplace.json:6: plugin b: sha "abc" must be a full 40-character lowercase commit id`,
		`error .claude-plugin/marketplace.json:7: plugin c: source type "svn" is not one of github, url, git-subdir, npm, archive, command`,
		`error .claude-plugin/marketplace.json:9: plugins[4]: a second plugin named "d" (ignored)`,
		`error .claude-plugin/marketplace.json:10: plugin e: source "./missing" does not exist (missing)`,
		`error plugins/d/.claude-plugin/plugin.json:1: author is a string, want an object {"name": "…", "email": "…", "url": "…"} (keel takes the string as the name)`,
		`warning .claude-plugin/marketplace.json:8: unknown key colour (ignored; the keys are $schema, name, displayName, version, description, author, homepage, repository, license, keywords, commands, agents, skills, hooks, mcpServers, lspServers, outputStyles, source, category, tags, strict, headers, headersHelper, relevance)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	if reports[0].OK() {
		t.Error("an invalid marketplace validated")
	}
}

func TestValidateGood(t *testing.T) {
	root := writeTree(t, t.TempDir(), map[string]string{
		".claude-plugin/plugin.json": `{"name": "good", "version": "1.0.0", "description": "d", "author": {"name": "me"}}`,
		"commands/c.md":              "---\ndescription: c\n---\nbody",
	})
	reports, err := Validate(t.Context(), filepath.Join(root, ".claude-plugin", "plugin.json"))
	if err != nil || len(reports) != 1 || !reports[0].OK() || len(reports[0].Problems) != 0 {
		t.Fatalf("a good plugin: %+v %v", reports, err)
	}
	var b strings.Builder
	WriteText(&b, reports)
	if !strings.HasSuffix(b.String(), "Validation passed (0 errors, 0 warnings)\n") {
		t.Errorf("output:\n%s", b.String())
	}
	if _, err := Validate(t.Context(), filepath.Join(root, "commands", "c.md")); err == nil {
		t.Error("a markdown file was validated")
	}
}
