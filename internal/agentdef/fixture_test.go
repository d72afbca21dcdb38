package agentdef

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/goldentest"
)

// loadFixture loads testdata/fixture, which holds agent files of every supported harness in
// keel's own words, including one broken file. Paths are relative, so output is stable.
func loadFixture(t *testing.T) *Set {
	t.Helper()
	cli, err := os.ReadFile("testdata/fixture/cli.json")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load(t.Context(), Options{
		ProjectDir: "testdata/fixture/project",
		HomeDir:    "testdata/fixture/home",
		CLIAgents:  string(cli),
		ManagedDir: "testdata/fixture/managed",
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, name, got)
}

func TestFixtureText(t *testing.T) {
	var buf bytes.Buffer
	if err := loadFixture(t).List().WriteText(&buf, "testdata/fixture/project", "testdata/fixture/home"); err != nil {
		t.Fatal(err)
	}
	golden(t, "agents.txt", buf.Bytes())
}

func TestFixtureJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := loadFixture(t).List().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "agents.json", buf.Bytes())
}

// TestFixtureEveryFileLoads checks, independently of the golden files, that every fixture file
// but the broken one produced a definition, and that the broken one produced its errors.
func TestFixtureEveryFileLoads(t *testing.T) {
	set := loadFixture(t)
	loaded := map[string]bool{}
	for _, e := range set.List().Agents {
		loaded[filepath.ToSlash(e.Path)] = true
		if e.Name == "" || e.Description == "" {
			t.Errorf("%s: empty name or description", e.Path)
		}
	}
	for _, f := range []string{
		"testdata/fixture/home/.claude/agents/reviewer.md",
		"testdata/fixture/home/.keel/agents/planner.md",
		"testdata/fixture/managed/security.md",
		"testdata/fixture/project/.claude/agents/notes.json",
		"testdata/fixture/project/.claude/agents/reviewer.md",
		"testdata/fixture/project/.claude/agents/team/release-notes.md",
		"testdata/fixture/project/.claude/agents/triage.md",
		"testdata/fixture/project/.codex/agents/fixer.toml",
		"testdata/fixture/project/.codex/agents/mapper.toml",
		"testdata/fixture/project/.gemini/agents/log-reader.md",
		"testdata/fixture/project/.keel/agents/Explore.md",
		"testdata/fixture/project/.keel/agents/reviewer.md",
		"testdata/fixture/project/.opencode/agent/helpers/summarizer.md",
		CLIPath,
	} {
		if !loaded[f] {
			t.Errorf("%s did not load", f)
		}
	}
	if loaded["testdata/fixture/project/.claude/agents/broken.md"] {
		t.Error("broken.md loaded")
	}
	want := []string{
		`error: testdata/fixture/project/.claude/agents/broken.md:4: permissionMode "yolo" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions, auto, bubble`,
		"error: testdata/fixture/project/.claude/agents/broken.md:5: maxTurns must be a positive integer, got 0",
	}
	if diff := cmp.Diff(want, render(set.Errors())); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}
