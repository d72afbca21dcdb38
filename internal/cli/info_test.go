package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// infoProject makes a project (a repository root) with settings, a skill, an agent and a
// memory file, and works in a directory below it; it returns the root. The user's home is
// the test's own, so nothing of this machine's user shows.
func infoProject(t *testing.T) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	root := writeTree(t, t.TempDir(), map[string]string{
		".git/HEAD":                     "ref: refs/heads/main\n",
		".claude/settings.json":         `{"model": "sonnet", "permissions": {"allow": ["Bash(make:*)"]}}`,
		".claude/skills/greet/SKILL.md": "---\nname: greet\ndescription: says hello\n---\nSay hello.\n",
		".claude/agents/reviewer.md":    "---\nname: reviewer\ndescription: reviews code\n---\nReview it.\n",
		"CLAUDE.md":                     "Indent with tabs.\n",
		"sub/.keep":                     "",
	})
	t.Chdir(filepath.Join(root, "sub"))
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// keel config shows the merged settings with the file of each, and lists what an untrusted
// workspace may not widen as ignored; keel trust (by default the project's root) lifts that.
func TestConfigAndTrust(t *testing.T) {
	root := infoProject(t)
	home := t.TempDir()
	settingsFile := filepath.Join(root, ".claude", "settings.json")
	code, out := runKeel(t, home, "config")
	if code != 0 || !strings.Contains(out, `model  "sonnet"  project `+settingsFile+":1") ||
		!strings.Contains(out, "ignored: the workspace is not trusted") || !strings.Contains(out, "permissions.allow  project") {
		t.Errorf("keel config exited %d:\n%s\nwant the model from %s and the allow rule ignored", code, out, settingsFile)
	}
	code, out = runKeel(t, home, "config", "--json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || !strings.Contains(out, `"sonnet"`) {
		t.Errorf("keel config --json exited %d:\n%s", code, out)
	}

	if code, out := runKeel(t, home, "trust"); code != 0 || strings.TrimSpace(out) != "trusted "+root {
		t.Fatalf("keel trust exited %d:\n%s\nwant trusted %s (the project's root)", code, out, root)
	}
	code, out = runKeel(t, home, "config")
	if code != 0 || !strings.Contains(out, `permissions.allow[]  "Bash(make:*)"  project`) || strings.Contains(out, "not trusted") {
		t.Errorf("keel config in a trusted workspace exited %d:\n%s\nwant the allow rule among the settings", code, out)
	}

	other := t.TempDir()
	rel, err := filepath.Rel(filepath.Join(root, "sub"), other)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := runKeel(t, home, "trust", rel); code != 0 || strings.TrimSpace(out) != "trusted "+other {
		t.Errorf("keel trust %s exited %d:\n%s\nwant trusted %s", rel, code, out, other)
	}
}

// keel skills, agents and memory list what a session here would load, from the project's
// files, as text and as JSON.
func TestInfoListings(t *testing.T) {
	infoProject(t)
	home := t.TempDir()
	for _, c := range []struct {
		cmd, want string
	}{
		{"skills", "greet"},
		{"agents", "reviewer"},
		{"memory", "CLAUDE.md"},
	} {
		code, out := runKeel(t, home, c.cmd)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("keel %s exited %d:\n%s\nwant %s", c.cmd, code, out, c.want)
		}
		code, out = runKeel(t, home, c.cmd, "--json")
		if code != 0 || !json.Valid([]byte(out)) || !strings.Contains(out, c.want) {
			t.Errorf("keel %s --json exited %d:\n%s\nwant JSON naming %s", c.cmd, code, out, c.want)
		}
	}
	if code, out := runKeel(t, home, "skills"); code != 0 || !infoRow(out, "greet", "says hello") {
		t.Errorf("keel skills has no row for greet with its description:\n%s", out)
	}
	if code, out := runKeel(t, home, "agents"); code != 0 || !infoRow(out, "reviewer", ".claude/agents/reviewer.md") {
		t.Errorf("keel agents has no row for reviewer with its file:\n%s", out)
	}
}

// infoRow says a line of out starts with name and holds want.
func infoRow(out, name, want string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), name+" ") && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// keel memory lists what a session here would load: an include a Read deny rule covers is
// shown as excluded, with the rule, not as a memory file, in text and in JSON.
func TestMemoryListsADeniedIncludeAsExcluded(t *testing.T) {
	root := infoProject(t)
	writeTree(t, root, map[string]string{
		"CLAUDE.md":     "Indent with tabs.\nSee @secrets/token for the build id.\n",
		"secrets/token": "TOKEN-SECRET-8",
	})
	home := writeTree(t, t.TempDir(), map[string]string{
		"settings.json": `{"permissions": {"deny": ["Read(/` + filepath.Join(root, "secrets") + `/**)"]}}`,
	})
	code, out := runKeel(t, home, "memory")
	if code != 0 || !strings.Contains(out, "Excluded (not read into the prompt):\n     ../CLAUDE.md:2 includes ../secrets/token: a Read deny rule covers it") ||
		strings.Contains(out, "project  ../secrets/token") {
		t.Errorf("keel memory exited %d:\n%s\nwant ../secrets/token excluded, not loaded", code, out)
	}
	code, out = runKeel(t, home, "memory", "--json")
	var r struct {
		Files    []struct{ Display string }
		Excluded []struct{ Path, Why string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Files) != 1 || len(r.Excluded) != 1 || r.Excluded[0].Path != "../secrets/token" {
		t.Errorf("keel memory --json exited %d:\n%s\nwant one file and ../secrets/token excluded", code, out)
	}
}
