package skill

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/compattest"
)

func compatDir(t *testing.T) string {
	t.Helper()
	return compattest.Dir(t, "claude")
}

// TestCompatSkills loads the published skills folder as a skills root: every skill must load
// with its name and description; the one with invalid YAML loads with a warning.
func TestCompatSkills(t *testing.T) {
	root := filepath.Join(compatDir(t), "skills")
	found, problems := loadSkillDir(entryFiles{}, root, SourceClaudeProject)
	var got []string
	for _, p := range problems {
		rel, _ := filepath.Rel(root, p.Path)
		if p.Skipped {
			t.Errorf("skill dropped: %s", p.Error())
		}
		got = append(got, filepath.ToSlash(rel)+":"+strconv.Itoa(p.Line))
	}
	// flow-discover has an unquoted ": " in a multi-line plain description, which strict YAML
	// parsers reject; goccy/go-yaml reads it, and the line fallback would too (TestRecoverLines).
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s\n%v", diff, problems)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(entries) || len(found) < 15 {
		t.Errorf("loaded %d skills from %d folders", len(found), len(entries))
	}
	type row struct {
		Name    string
		Context Context
		Agent   string
		User    bool
		Model   bool
		Tools   int
	}
	byName := map[string]row{}
	for _, s := range found {
		if s.Name == "" || s.Description == "" || !s.hasDescription {
			t.Errorf("%s: name %q description %q", s.Path, s.Name, s.Description)
		}
		body, err := s.read()
		if err != nil || strings.TrimSpace(body) == "" || strings.HasPrefix(body, "---") {
			t.Errorf("%s: body %.40q, %v", s.Path, body, err)
		}
		byName[s.Name] = row{s.Name, s.Context, s.Agent, s.UserInvocable, s.ModelInvocable(), len(s.AllowedTools)}
	}
	want := map[string]row{
		// name differs from the folder (skill-deep-research)
		"octopus-research": {"octopus-research", ContextFork, "Explore", true, false, 0},
		"flow-discover":    {"flow-discover", ContextFork, "Explore", true, false, 0},
		// space-separated Agent Skills style, with a rule in parentheses
		"videodb": {"videodb", ContextInline, "", true, true, 4},
		// allowed-tools as a quoted space-separated string
		"planning-with-files": {"planning-with-files", ContextInline, "", true, true, 6},
		"weather-fetcher":     {"weather-fetcher", ContextInline, "", false, true, 1},
		// agent without context: fork stays inline
		"trace": {"trace", ContextInline, "tracer", true, true, 0},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, byName[name]); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
		}
	}
	fd := findSkill(found, "flow-discover")
	if !strings.HasPrefix(fd.Description, "Multi-AI research using available external providers") ||
		!strings.Contains(fd.Description, `PRIORITY TRIGGERS (always invoke): "octo research"`) {
		t.Errorf("flow-discover description not recovered: %q", fd.Description)
	}
	if hint := findSkill(found, "codex-cto").ArgumentHint; hint != "[objective]" {
		t.Errorf("codex-cto argument-hint = %q, want the list written back as [objective]", hint)
	}
	if _, ok := findSkill(found, "planning-with-files").Extra["hooks"]; !ok {
		t.Error("planning-with-files: hooks in frontmatter not kept in Extra")
	}
}

// TestCompatCommands loads each published commands folder as a commands root, so paths below
// it give the names (gsd/add-tests.md is gsd:add-tests).
func TestCompatCommands(t *testing.T) {
	root := filepath.Join(compatDir(t), "commands")
	repos, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Skill{}
	for _, repo := range repos {
		found, problems := loadCommandDir(entryFiles{}, filepath.Join(root, repo.Name()), SourceClaudeProject)
		for _, p := range problems {
			if p.Skipped {
				t.Errorf("command dropped: %s", p.Error())
			}
		}
		for _, s := range found {
			if s.Description == "" {
				t.Errorf("%s: no description", s.Path)
			}
			byName[s.Name] = s
		}
	}
	if len(byName) < 14 {
		t.Errorf("loaded %d commands, want 14", len(byName))
	}
	if s := byName["gsd:add-tests"]; s.ArgumentHint != "<phase> [additional instructions]" || len(s.AllowedTools) != 8 {
		t.Errorf("gsd:add-tests = %+v", s)
	}
	if s := byName["code-review"]; len(s.AllowedTools) != 7 || s.AllowedTools[0] != "Bash(gh issue view:*)" {
		t.Errorf("code-review tools = %q", s.AllowedTools)
	}
	if s := byName["oak-commit"]; cmp.Diff([]string{"Read", "Glob", "LS", "Shell"}, s.AllowedTools) != "" {
		t.Errorf("oak-commit tools = %q", s.AllowedTools)
	}
	if s := byName["create-plugin"]; len(s.AllowedTools) != 9 {
		t.Errorf("create-plugin tools = %q", s.AllowedTools)
	}
	// No frontmatter: the first line describes it.
	if s := byName["commit-and-pr"]; !strings.HasPrefix(s.Description, "Let's commit the changes.") || s.hasDescription {
		t.Errorf("commit-and-pr = %q", s.Description)
	}
	// A blank line before the fence: read as frontmatter, with a warning.
	if s := byName["create_worktree"]; s.Description != "Create worktree and launch implementation session for a plan" {
		t.Errorf("create_worktree = %q", s.Description)
	}
	if s := byName["interview"]; s.ArgumentHint != "[plan]" || s.Model != "opus" {
		t.Errorf("interview = %q %q", s.ArgumentHint, s.Model)
	}

	// Bodies expand as Claude Code would: $1 filled, ${{ }} untouched, {{args}} kept with the
	// arguments appended, !`git …` denied without a permission check.
	expand := func(name, args string) string {
		s := byName[name]
		body, err := s.read()
		if err != nil {
			t.Fatal(err)
		}
		e := &expander{opts: Options{}, cwd: t.TempDir(), allowed: s.AllowedTools}
		return e.expand(t.Context(), Substitute(body, args, ""))
	}
	if got := expand("interview", "plan.md"); !strings.Contains(got, "Read this plan file plan.md and interview me") {
		t.Errorf("interview: %.80q", got)
	}
	if got := expand("label-issue", ""); !strings.Contains(got, "REPO: ${{ github.repository }}") {
		t.Errorf("label-issue lost the Actions expression")
	}
	if got := expand("slash-command-test", "hello world"); !strings.HasSuffix(got, "{{args}}\n\nARGUMENTS: hello world") {
		t.Errorf("slash-command-test: %q", got)
	}
	if got := expand("commit", ""); !strings.Contains(got, "- Current git status: [shell command not run: git status: shell commands in skills are not enabled]") {
		t.Errorf("commit: %q", got)
	}
}

func findSkill(list []Skill, name string) Skill {
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	return Skill{}
}
