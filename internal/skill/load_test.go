package skill

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/prompt"
	"strings"
)

// write creates root/rel with text, making directories as needed.
func write(t *testing.T, root, rel, text string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func skillFile(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
}

// layout is a home, a keel home and a project with a nested working directory.
type layout struct{ home, keelHome, root, cwd string }

func newLayout(t *testing.T) layout {
	t.Helper()
	base := t.TempDir()
	l := layout{
		home:     filepath.Join(base, "home"),
		keelHome: filepath.Join(base, "keelhome"),
		root:     filepath.Join(base, "proj"),
	}
	l.cwd = filepath.Join(l.root, "svc", "api")
	for _, d := range []string{l.home, l.keelHome, filepath.Join(l.root, ".git"), l.cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func (l layout) load(t *testing.T, mod ...func(*Options)) (*Catalog, []Problem) {
	t.Helper()
	opts := Options{Cwd: l.cwd, Home: l.home, KeelHome: l.keelHome, NoBundled: true}
	for _, m := range mod {
		m(&opts)
	}
	return Load(opts)
}

func TestPrecedence(t *testing.T) {
	l := newLayout(t)
	// "deploy" is defined at every level; each level should beat the ones before it.
	paths := []string{
		write(t, l.home, ".claude/commands/deploy.md", "---\ndescription: claude user command\n---\nbody"),
		write(t, l.home, ".claude/skills/deploy/SKILL.md", skillFile("deploy", "claude user skill", "b")),
		write(t, l.keelHome, "commands/deploy.md", "---\ndescription: keel user command\n---\nb"),
		write(t, l.keelHome, "skills/deploy/SKILL.md", skillFile("deploy", "keel user skill", "b")),
		write(t, l.root, ".claude/commands/deploy.md", "---\ndescription: claude root command\n---\nb"),
		write(t, l.root, ".claude/skills/deploy/SKILL.md", skillFile("deploy", "claude root skill", "b")),
		write(t, l.root, ".keel/skills/deploy/SKILL.md", skillFile("deploy", "keel root skill", "b")),
		write(t, l.root, "svc/.claude/skills/deploy/SKILL.md", skillFile("deploy", "claude svc skill", "b")),
		write(t, l.root, "svc/api/.keel/commands/deploy.md", "---\ndescription: keel cwd command\n---\nb"),
	}
	// Single-level names show which source each level yields.
	write(t, l.home, ".claude/skills/only-claude-user/SKILL.md", skillFile("only-claude-user", "x", "b"))
	write(t, l.keelHome, "skills/only-user/SKILL.md", skillFile("only-user", "x", "b"))
	write(t, l.root, ".claude/commands/only-claude-project.md", "b")
	write(t, l.root, ".keel/skills/only-project/SKILL.md", skillFile("only-project", "x", "b"))
	// A project skill beats a user skill; at one level .keel beats .claude; a skill beats a
	// command of the same name at the same level.
	write(t, l.keelHome, "skills/lint/SKILL.md", skillFile("lint", "user", "b"))
	write(t, l.root, ".claude/skills/lint/SKILL.md", skillFile("lint", "claude project", "b"))
	write(t, l.root, ".claude/commands/fmt.md", "---\ndescription: command\n---\nb")
	write(t, l.root, ".claude/skills/fmt/SKILL.md", skillFile("fmt", "skill", "b"))
	write(t, l.root, ".keel/commands/fmt.md", "---\ndescription: keel command\n---\nb")

	c, problems := l.load(t)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	type row struct {
		Name, Description string
		Kind              Kind
		Source            Source
	}
	var got []row
	for _, s := range c.All() {
		got = append(got, row{s.Name, s.Description, s.Kind, s.Source})
	}
	want := []row{
		{"deploy", "keel cwd command", KindCommand, SourceProject},
		{"fmt", "keel command", KindCommand, SourceProject},
		{"lint", "claude project", KindSkill, SourceClaudeProject},
		{"only-claude-project", "b", KindCommand, SourceClaudeProject},
		{"only-claude-user", "x", KindSkill, SourceClaudeUser},
		{"only-project", "x", KindSkill, SourceProject},
		{"only-user", "x", KindSkill, SourceUser},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	deploy, _ := c.Lookup("deploy")
	var wantOverrides []string
	for i := len(paths) - 2; i >= 0; i-- {
		wantOverrides = append(wantOverrides, paths[i])
	}
	if diff := cmp.Diff(wantOverrides, deploy.Overrides); diff != "" {
		t.Errorf("overrides mismatch (-want +got):\n%s", diff)
	}
}

func TestProjectRootWithoutGit(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, ".keel/skills/a/SKILL.md", skillFile("a", "x", "b"))
	c, _ := Load(Options{Cwd: dir, NoBundled: true})
	if _, ok := c.Lookup("a"); !ok {
		t.Fatal("skill in cwd without a repository not found")
	}
}

func TestNamespacedCommands(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".claude/commands/frontend/component.md", "---\ndescription: make a component\n---\nb")
	write(t, l.root, ".claude/commands/a/b/c.md", "# Deep one\nbody")
	write(t, l.root, ".claude/commands/notes.txt", "not a command")
	c, problems := l.load(t)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var names []string
	for _, s := range c.All() {
		names = append(names, s.Name+" = "+s.Description)
	}
	want := []string{"a:b:c = Deep one", "frontend:component = make a component"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestFrontmatterFields(t *testing.T) {
	l := newLayout(t)
	write(t, l.root, ".keel/skills/full/SKILL.md", `---
name: full
description: |
  Does everything.
  Second line.
allowed-tools: Read, Grep, Bash(gh pr view:*)
model: haiku
context: fork
agent: Explore
argument-hint: [target]
disable-model-invocation: "true"
user-invocable: false
license: MIT
metadata:
  version: "1.0"
---
Body.
`)
	write(t, l.root, ".keel/skills/spaces/SKILL.md", "---\nname: spaces\ndescription: d\nallowed-tools: Read Grep Glob Bash(python:*)\n---\n")
	write(t, l.root, ".keel/skills/flow/SKILL.md", "---\nname: flow\ndescription: d\nallowed-tools: [\"Read\", \"Grep\",\n  \"Glob\",\n]\n---\n")
	write(t, l.root, ".keel/skills/folder-name/SKILL.md", "---\ndescription: no name key\n---\n")
	c, problems := l.load(t)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	full, _ := c.Lookup("full")
	full.read = nil
	want := Skill{
		Name: "full", Description: "Does everything.\nSecond line.", Kind: KindSkill, Source: SourceProject,
		Path: filepath.Join(l.root, ".keel/skills/full/SKILL.md"), Dir: filepath.Join(l.root, ".keel/skills/full"),
		AllowedTools: []string{"Read", "Grep", "Bash(gh pr view:*)"}, Model: "haiku", Context: ContextFork,
		Agent: "Explore", ArgumentHint: "[target]", DisableModelInvocation: true, UserInvocable: false,
		Extra:          map[string]any{"license": "MIT", "metadata": map[string]any{"version": "1.0"}},
		hasDescription: true,
	}
	if diff := cmp.Diff(want, full, cmp.AllowUnexported(Skill{})); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	for name, tools := range map[string][]string{
		"spaces": {"Read", "Grep", "Glob", "Bash(python:*)"},
		"flow":   {"Read", "Grep", "Glob"},
	} {
		s, _ := c.Lookup(name)
		if diff := cmp.Diff(tools, s.AllowedTools); diff != "" {
			t.Errorf("%s allowed-tools mismatch (-want +got):\n%s", name, diff)
		}
	}
	if _, ok := c.Lookup("folder-name"); !ok {
		t.Error("skill without a name key not found under its folder name")
	}
}

// TestBadFrontmatter checks that a bad value names file, line and valid values, drops that
// skill, and leaves the others loaded; and that unparseable YAML is recovered with a warning.
func TestBadFrontmatter(t *testing.T) {
	l := newLayout(t)
	dir := filepath.Join(l.root, ".keel/skills")
	write(t, dir, "bad-context/SKILL.md", "---\nname: bad-context\ndescription: x\ncontext: forked\n---\nb")
	write(t, dir, "bad-bool/SKILL.md", "---\nname: bad-bool\n\ndescription: x\nuser-invocable: maybe\n---\nb")
	write(t, dir, "bad-tools/SKILL.md", "---\nname: bad-tools\nallowed-tools:\n  read: true\n---\nb")
	write(t, dir, "bad-yaml/SKILL.md", "---\nname: bad-yaml\ndescription: Research things. Triggers on: research, explore\n# comment\ncontext: fork\n---\nb")
	write(t, dir, "spaced-name/SKILL.md", "---\nname: My Skill\ndescription: x\n---\nb")
	write(t, dir, "good/SKILL.md", skillFile("good", "fine", "b"))
	write(t, l.root, ".keel/commands/blank-first.md", "\n\n---\ndescription: after blank lines\nmodel: sonnet\n---\nbody")
	c, problems := l.load(t)
	var got []string
	for _, p := range problems {
		rel, _ := filepath.Rel(l.root, p.Path)
		p.Path = filepath.ToSlash(rel)
		got = append(got, fmt_(p))
	}
	want := []string{
		`warning .keel/commands/blank-first.md:3: frontmatter starts after blank lines; read as frontmatter`,
		`skipped .keel/skills/bad-bool/SKILL.md:5: user-invocable: maybe is not one of true, false`,
		`skipped .keel/skills/bad-context/SKILL.md:4: context: "forked" is not one of inline, fork`,
		`skipped .keel/skills/bad-tools/SKILL.md:3: allowed-tools: want a list or a comma-separated string, got a mapping`,
		`warning .keel/skills/bad-yaml/SKILL.md:3: frontmatter is not valid YAML (mapping value is not allowed in this context); read its top-level key: value lines instead`,
		`warning .keel/skills/spaced-name/SKILL.md:2: name "My Skill" has spaces or slashes; using the folder name "spaced-name"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
	var names []string
	for _, s := range c.All() {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"bad-yaml", "blank-first", "good", "spaced-name"}, names); diff != "" {
		t.Errorf("loaded mismatch (-want +got):\n%s", diff)
	}
	by, _ := c.Lookup("bad-yaml")
	if by.Description != "Research things. Triggers on: research, explore" || by.Context != ContextFork {
		t.Errorf("recovered bad-yaml = %q, %q", by.Description, by.Context)
	}
	bf, _ := c.Lookup("blank-first")
	if bf.Description != "after blank lines" || bf.Model != "sonnet" {
		t.Errorf("blank-first = %q, %q", bf.Description, bf.Model)
	}
	inv, err := c.Invoke(t.Context(), "blank-first", "", ByUser, "")
	if err != nil || inv.Text != "body" {
		t.Errorf("blank-first body = %q, %v; want the text after the frontmatter", inv.Text, err)
	}
}

func fmt_(p Problem) string {
	if p.Skipped {
		return "skipped " + p.Error()
	}
	return "warning " + p.Error()
}

func TestBundledSkillsLoadCleanly(t *testing.T) {
	entries, err := bundledFS.ReadDir("bundled")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := "bundled/" + e.Name() + "/SKILL.md"
		data, err := bundledFS.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s, problems, ok := parseSkill(p, e.Name(), data, KindSkill, SourceBundled)
		if !ok || len(problems) > 0 {
			t.Errorf("%s: ok=%v problems=%v", p, ok, problems)
		}
		if s.Name != e.Name() || !s.hasDescription || len(s.Description) > MaxListedDescription {
			t.Errorf("%s: name %q, description %d bytes; want the folder name and a description that fits the listing", p, s.Name, len(s.Description))
		}
	}
	c, problems := Load(Options{Cwd: t.TempDir()})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	var names []string
	for _, s := range c.All() {
		names = append(names, s.Name+":"+string(s.Source))
	}
	want := []string{"commit-message:bundled", "explain-test-failure:bundled", "init:bundled", "review:bundled"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if l, _ := c.Entries(); slices.ContainsFunc(l, func(e prompt.Entry) bool { return e.Name == "init" }) {
		t.Errorf("init writes files and is user-only, but the listing offers it: %+v", l)
	}
}

// TestHugeEntryFileIsAProblem: a command file past maxEntryBytes — a sparse one costs no
// disk — is reported and left out, never read into memory.
func TestHugeEntryFileIsAProblem(t *testing.T) {
	l := newLayout(t)
	path := write(t, l.root, ".keel/commands/huge.md", "")
	if err := os.Truncate(path, 4*maxEntryBytes); err != nil {
		t.Fatal(err)
	}
	c, problems := l.load(t)
	if _, ok := c.Lookup("huge"); ok {
		t.Error("the huge command was loaded")
	}
	if len(problems) != 1 || problems[0].Path != path || !strings.Contains(problems[0].Msg, "more than the 4 MiB keel reads whole") {
		t.Errorf("problems = %+v", problems)
	}
}
