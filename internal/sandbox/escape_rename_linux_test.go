package sandbox_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// TestEscapeRenameParent: a read-only path is a mount, which cannot be renamed, but its
// parent could be, taking the mount with it and leaving the path free to be made again —
// a nested denyWrite entry, a hook script, git's global configuration when the home directory
// is a writable root — and a masked secret moved that way would be read by the next command
// under its new name. Every directory between a writable root and such a path stays where it
// is, so none of it works; the workspace's own files still move.
func TestEscapeRenameParent(t *testing.T) { forEachLauncher(t, testEscapeRenameParent) }

func testEscapeRenameParent(t *testing.T) {
	ws := filepath.Join(sandbox.VisibleDir(t), "home")
	files := map[string]string{
		"a/b/protected.txt":  "original\n",
		"scripts/hook.sh":    "#!/bin/sh\nexit 0\n",
		".config/git/config": "[user]\n\tname = me\n",
		"x/privkeys/id_rsa":  "SECRET-denyRead\n",
		"vault/token.txt":    "SECRET-rule\n",
		"src/pkg/main.go":    "package main\n",
	}
	for name, content := range files {
		write(t, filepath.Join(ws, name), content)
	}
	git(t, ws, "init", "-q")
	sb := &settings.Sandbox{}
	sb.Filesystem.DenyWrite = vals(filepath.Join(ws, "a", "b", "protected.txt"))
	sb.Filesystem.DenyRead = vals(filepath.Join(ws, "x", "privkeys"))
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: sb, Dirs: []string{ws}, Home: ws,
		Protect: []string{filepath.Join(ws, "scripts", "hook.sh")}, ReadDeny: []sandbox.PathRule{{Spec: "./vault/token.txt"}}}
	w := &world{ws: ws, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	t.Setenv("HOME", ws)

	out := w.run(t, `for d in a a/b scripts .config x x/privkeys vault; do mv $d $d.moved 2>/dev/null && echo "MOVED $d"; done
mkdir -p a/b scripts .config/git 2>/dev/null
echo EVIL > a/b/protected.txt; echo EVIL > scripts/hook.sh; echo EVIL > .config/git/config
mv src src.moved && echo "MOVED src"; echo DONE`)
	if strings.Contains(out, "MOVED a") || strings.Contains(out, "MOVED scripts") || strings.Contains(out, "MOVED .config") ||
		strings.Contains(out, "MOVED x") || strings.Contains(out, "MOVED vault") {
		t.Errorf("a parent of a read-only or masked path was renamed:\n%s", out)
	}
	if !strings.Contains(out, "MOVED src") || !strings.Contains(out, "DONE") {
		t.Errorf("the workspace's own directories no longer move:\n%s", out)
	}
	for name, content := range files {
		if name == "src/pkg/main.go" {
			name = "src.moved/pkg/main.go"
		}
		if got, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(got) != content {
			t.Errorf("%s after the command: %q, %v; want it unchanged", name, got, err)
		}
	}
	out = w.run(t, `cat x.moved/privkeys/id_rsa vault.moved/token.txt x/privkeys/id_rsa vault/token.txt 2>&1; echo DONE`)
	if strings.Contains(out, "SECRET") || !strings.Contains(out, "DONE") {
		t.Errorf("the next command read a masked secret:\n%s", out)
	}
}

// TestEscapeReplaceLink: a read-only path reached through a link is protected where the link
// leads; the link itself can be removed and something else made in its place. As the command
// ends keel makes the link again and moves the replacement aside, and says so.
func TestEscapeReplaceLink(t *testing.T) { forEachLauncher(t, testEscapeReplaceLink) }

func testEscapeReplaceLink(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := filepath.Join(base, "ws")
	write(t, filepath.Join(base, "shared", "claude", "settings.json"), "{}\n")
	write(t, filepath.Join(base, "shared", "conf", "mcp.json"), "{}\n")
	write(t, filepath.Join(ws, "real", "hook.sh"), "#!/bin/sh\n")
	// .mcp.json leads through a second link, conf: a chain.
	for link, target := range map[string]string{".claude": "../shared/claude", "tools": "real", ".mcp.json": "conf/mcp.json", "conf": "../shared/conf"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, Protect: []string{filepath.Join(ws, "tools", "hook.sh")}}
	w := &world{ws: ws, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)

	out, said := w.say(t, `echo EVIL > .claude/settings.json; echo EVIL > tools/hook.sh
rm .claude && mkdir .claude && echo EVIL > .claude/settings.json && echo REPLACED-claude
rm tools && mkdir tools && echo EVIL > tools/hook.sh && echo REPLACED-tools
rm conf && mkdir conf && echo EVIL > conf/mcp.json && echo REPLACED-conf; echo DONE`)
	if !strings.Contains(out, "REPLACED-claude") || !strings.Contains(out, "REPLACED-tools") || !strings.Contains(out, "REPLACED-conf") {
		t.Fatalf("the links could not be replaced inside (the test needs them to be):\n%s", out)
	}
	for link, target := range map[string]string{".claude": "../shared/claude", "tools": "real", "conf": "../shared/conf"} {
		p := filepath.Join(ws, link)
		if got, err := os.Readlink(p); err != nil || got != target {
			t.Errorf("%s after the release: %q, %v; want the link to %s again", link, got, err, target)
		}
		if got, err := os.ReadFile(filepath.Join(ws, link+".keel-refused", map[string]string{".claude": "settings.json", "tools": "hook.sh", "conf": "mcp.json"}[link])); err != nil || string(got) != "EVIL\n" {
			t.Errorf("the replacement of %s is not kept aside: %q, %v", link, got, err)
		}
		if !strings.Contains(said, "the command replaced "+p+", a link to "+target) {
			t.Errorf("the release does not say %s was replaced:\n%s", link, said)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(base, "shared", "claude", "settings.json")); string(got) != "{}\n" {
		t.Errorf("the linked settings changed: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "real", "hook.sh")); string(got) != "#!/bin/sh\n" {
		t.Errorf("the linked hook changed: %q", got)
	}
}

// TestReplacedLinkMadeAgainBeforeTheNextCommand: a link a command still running replaced is
// made again before another command starts, not only as one ends — the next command, and
// keel's hooks between commands, would otherwise use the replacement meanwhile.
func TestReplacedLinkMadeAgainBeforeTheNextCommand(t *testing.T) {
	forEachLauncher(t, testReplacedLinkMadeAgainBeforeTheNextCommand)
}

func testReplacedLinkMadeAgainBeforeTheNextCommand(t *testing.T) {
	ws := filepath.Join(sandbox.VisibleDir(t), "ws")
	write(t, filepath.Join(ws, "real", "hook.sh"), "#!/bin/sh\n")
	if err := os.Symlink("real", filepath.Join(ws, "tools")); err != nil {
		t.Fatal(err)
	}
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, Protect: []string{filepath.Join(ws, "tools", "hook.sh")}}
	s := sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})
	skipWithoutSandbox(t, s)
	bg := exec.Command("bash", "-c", "rm tools && mkdir tools && echo EVIL > tools/hook.sh && echo READY && read a")
	bg.Dir = ws
	stdin, err := bg.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := bg.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	bgRun, err := s.Confine(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "READY\n" {
		t.Fatalf("the background command said %q (%v)", line, err)
	}
	next := exec.Command("cat", "tools/hook.sh")
	next.Dir = ws
	run, err := s.Confine(next)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := next.Output()
	run.Release()
	if string(out) != "#!/bin/sh\n" {
		t.Errorf("the next command read %q through tools, want the real hook", out)
	}
	if said := strings.Join(run.Planted(), "\n"); !strings.Contains(said, "the command replaced "+filepath.Join(ws, "tools")) {
		t.Errorf("the next command's result does not say tools was made again: %q", said)
	}
	stdin.Close()
	bg.Wait()
	bgRun.Release()
	if got, err := os.Readlink(filepath.Join(ws, "tools")); err != nil || got != "real" {
		t.Errorf("tools after both: %q, %v", got, err)
	}
}
