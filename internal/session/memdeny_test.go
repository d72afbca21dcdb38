package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestMemoryIncludesHonourReadDenyRulesAndMasks is adversary8's H5: a CLAUDE.md (written by
// a sandboxed command, or shipped by the repository) names `@secrets/token`, which a Read deny
// rule covers, and `@.env`, which sandbox.filesystem.denyRead masks; keel's memory loader
// read both into the system prompt. Neither may reach the model, trusted or not, sandbox on
// or off, and a notice says each was left out; the include beside them still expands.
func TestMemoryIncludesHonourReadDenyRulesAndMasks(t *testing.T) {
	for _, c := range []struct {
		trusted bool
		sandbox string
	}{{false, "workspace-write"}, {true, "workspace-write"}, {false, "off"}} {
		home, cwd := t.TempDir(), t.TempDir()
		writeTree(t, cwd, map[string]string{
			".git/HEAD":     "ref: refs/heads/main\n",
			"CLAUDE.md":     "# Project notes\nSee @secrets/token for the build id.\nThe style: @docs/style.md\nEnv: @.env\n",
			"secrets/token": "TOKEN-SECRET-8",
			".env":          "ENV-SECRET-8",
			"docs/style.md": "ALLOWED-STYLE",
		})
		writeTree(t, home, map[string]string{"settings.json": `{"permissions": {"deny": ["Read(/` + filepath.Join(cwd, "secrets") + `/**)"]},
  "sandbox": {"filesystem": {"denyRead": ["` + filepath.Join(cwd, ".env") + `"]}}}`})
		h := newHarness(t, calls(scripted.Text("done")), Options{Cwd: cwd, Home: home, Trust: c.trusted, Sandbox: c.sandbox})
		events := h.send(t, "go")
		body := h.bodies()
		for _, secret := range []string{"TOKEN-SECRET-8", "ENV-SECRET-8"} {
			if strings.Contains(body, secret) {
				t.Errorf("%+v: %s is in the request the model received", c, secret)
			}
		}
		if !strings.Contains(body, "ALLOWED-STYLE") {
			t.Errorf("%+v: the allowed include was not expanded into the system prompt", c)
		}
		got := notices(events)
		for _, want := range []string{
			"./CLAUDE.md:2: @secrets/token is not included: a Read deny rule covers it (Read(/",
			"./CLAUDE.md:4: @.env is not included: the sandbox masks it (sandbox.filesystem.denyRead)",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%+v: no notice %q:\n%s", c, want, got)
			}
		}
	}
}

// TestCommandFileMentionsHonourReadDenyRules: a project command's `@secrets/token`, which a
// Read deny rule covers, is not attached to the prompt the model receives, and the prompt says
// it was left out; the mention beside it still is attached.
func TestCommandFileMentionsHonourReadDenyRules(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	writeTree(t, cwd, map[string]string{
		".git/HEAD":                 "ref: refs/heads/main\n",
		".claude/commands/build.md": "Build with the id in @secrets/token, the style in @docs/style.md.\n",
		"secrets/token":             "TOKEN-SECRET-8",
		"docs/style.md":             "ALLOWED-STYLE",
	})
	writeTree(t, home, map[string]string{"settings.json": `{"permissions": {"deny": ["Read(./secrets/**)"]}}`})
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("done")}}}}
	h := newHarness(t, sc, Options{Cwd: cwd, Home: home})
	h.send(t, "/build")
	body := h.bodies()
	if strings.Contains(body, "TOKEN-SECRET-8") || !strings.Contains(body, "ALLOWED-STYLE") ||
		!strings.Contains(body, "@secrets/token is not included: a Read deny rule covers it") {
		t.Errorf("the request the model received:\n%s\nwant the style attached, the token left out with a note", body)
	}
}

// TestProjectOutputStyleLinkHonoursReadDenyRules: a project's output style that is a link to
// a file a Read deny rule covers is not read into the system prompt, and a notice says so.
func TestProjectOutputStyleLinkHonoursReadDenyRules(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	writeTree(t, cwd, map[string]string{".git/HEAD": "ref: refs/heads/main\n", "secrets/token": "TOKEN-SECRET-8"})
	if err := os.MkdirAll(filepath.Join(cwd, ".claude", "output-styles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(cwd, "secrets", "token"), filepath.Join(cwd, ".claude", "output-styles", "leak.md")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, home, map[string]string{"settings.json": `{"outputStyle": "leak", "permissions": {"deny": ["Read(./secrets/**)"]}}`})
	h := newHarness(t, calls(scripted.Text("done")), Options{Cwd: cwd, Home: home})
	events := h.send(t, "go")
	if strings.Contains(h.bodies(), "TOKEN-SECRET-8") {
		t.Error("the linked output style's content is in the request the model received")
	}
	if !strings.Contains(notices(events), "leak.md is not read: a Read deny rule covers it") {
		t.Errorf("no notice names the refused style:\n%s", notices(events))
	}
}

// TestAgentMemoryIndexLinkHonoursMasks: a project agent's MEMORY.md that a repository ships as
// a link to a file sandbox.filesystem.denyRead masks is not read into the agent's prompt.
func TestAgentMemoryIndexLinkHonoursMasks(t *testing.T) {
	home := t.TempDir()
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	writeTree(t, cwd, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".env": "ENV-SECRET-8"})
	writeAgent(t, cwd, "keeper", "memory: project\n")
	memDir := filepath.Join(cwd, ".keel", "agent-memory", "keeper")
	if err := os.MkdirAll(memDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(cwd, ".env"), filepath.Join(memDir, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, home, map[string]string{"settings.json": `{"sandbox": {"filesystem": {"denyRead": ["` + filepath.Join(cwd, ".env") + `"]}}}`})
	h := newHarness(t, spawnRules("keeper", "MEM-TASK",
		scripted.Rule{Name: "child", When: scripted.Match{UserText: "MEM-TASK"}, Reply: []scripted.Block{scripted.Text("noted")}}),
		Options{Cwd: cwd, Home: home, Trust: true})
	h.send(t, "start")
	body := string(requestWith(t, h, "MEM-TASK"))
	if strings.Contains(h.bodies(), "ENV-SECRET-8") || !strings.Contains(body, "MEMORY.md is not read: the sandbox masks it (sandbox.filesystem.denyRead)") {
		t.Errorf("the agent's request:\n%s\nwant its MEMORY.md left out", body)
	}
}

// TestMemoryIncludesSkipCommandsPrivateTmp is adversary10's N1: a sandboxed command writes a
// CLAUDE.md naming `@/tmp/…/secret`, a file in the host's /tmp, which the sandbox hides from
// its commands behind a private /tmp; in a trusted workspace the next session read it into the
// system prompt. With the sandbox on it is left out with a notice that says why; with it off,
// where commands see the host's /tmp anyway, a trusted workspace's include still reaches it.
func TestMemoryIncludesSkipCommandsPrivateTmp(t *testing.T) {
	hostTmp := t.TempDir() // under /tmp, outside the workspace and home
	secret := filepath.Join(hostTmp, "secret.txt")
	if err := os.WriteFile(secret, []byte("HOSTTMP-SECRET-10"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"workspace-write", "off"} {
		home, cwd := t.TempDir(), t.TempDir()
		writeTree(t, cwd, map[string]string{".git/HEAD": "ref: refs/heads/main\n", "CLAUDE.md": "# Notes\n@" + secret + "\n"})
		h := newHarness(t, calls(scripted.Text("done")), Options{Cwd: cwd, Home: home, Trust: true, Sandbox: mode})
		events := h.send(t, "go")
		leaked := strings.Contains(h.bodies(), "HOSTTMP-SECRET-10")
		if mode == "off" {
			if !leaked {
				t.Errorf("sandbox off: the trusted workspace's include of %s was not expanded", secret)
			}
			continue
		}
		if leaked {
			t.Errorf("sandbox on: %s, hidden from commands by their private /tmp, is in the request the model received", secret)
		}
		if want := "is not included: the file including it is one sandboxed commands can write, and they each have a private /tmp"; !strings.Contains(notices(events), want) {
			t.Errorf("sandbox on: no notice %q:\n%s", want, notices(events))
		}
	}
}
