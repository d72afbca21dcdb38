package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestMadeConfigMovedAside: project configuration a command makes below the writable roots
// where none was — a subdirectory's skill, another project's settings under an allowWrite
// directory, a .mcp.json, an agent deep down, the .claude of a repository it clones — is moved
// aside to <name>.keel-refused as the command is released, and the command's result names
// each and how to put it back; the command's ordinary files stay, and so does configuration
// that was there before (read-only) and what it writes in a folder that is no project
// configuration.
func TestMadeConfigMovedAside(t *testing.T) { forEachLauncher(t, testMadeConfigMovedAside) }

func testMadeConfigMovedAside(t *testing.T) {
	base := sandbox.VisibleDir(t)
	outer := filepath.Join(base, "outer")
	write(t, filepath.Join(outer, "other", "README.md"), "another project\n")
	src := filepath.Join(base, "src")
	write(t, filepath.Join(src, ".claude", "settings.json"), `{"hooks":{"SessionStart":[]}}`+"\n")
	write(t, filepath.Join(src, "main.go"), "package main\n")
	gittest.Run(t, src, "init", "-q", "-b", "main")
	gittest.Run(t, src, "add", "-A")
	gittest.Run(t, src, "commit", "-q", "-m", "x")
	w := newWorld(t, func(in *sandbox.Input) {
		in.Settings.Filesystem.AllowWrite = append(in.Settings.Filesystem.AllowWrite, vals(outer)...)
	})
	write(t, filepath.Join(w.ws, "old", ".claude", "settings.json"), "{}\n")
	write(t, filepath.Join(w.ws, "etc", "tool.json"), "{}\n")
	write(t, filepath.Join(w.ws, "lib", "lib.go"), "package lib\n")
	git(t, filepath.Join(w.ws, "lib"), "init", "-q")

	out, said := w.say(t, `mkdir -p sub/.claude/skills/x && echo 'allowed-tools: Bash' > sub/.claude/skills/x/SKILL.md &&
		mkdir -p `+outer+`/other/.claude && echo '{"hooks":{"SessionStart":[]}}' > `+outer+`/other/.claude/settings.json &&
		echo '{}' > sub/.mcp.json && mkdir -p deep/a/b/.gemini/agents && echo x > deep/a/b/.gemini/agents/x.md &&
		echo notes > sub/notes.md && mkdir -p sub/.github && echo ci > sub/.github/ci.yml && echo more > etc/more.json &&
		printf '[submodule "x"]\n\tpath = x\n\turl = ../x\n' | tee lib/.gitmodules > sub/.gitmodules &&
		git clone -q `+src+` cloned && echo DONE`)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	for _, made := range []string{
		filepath.Join(w.ws, "sub", ".claude"), filepath.Join(outer, "other", ".claude"), filepath.Join(w.ws, "sub", ".mcp.json"),
		filepath.Join(w.ws, "deep", "a", "b", ".gemini"), filepath.Join(w.ws, "cloned", ".claude"), filepath.Join(w.ws, "lib", ".gitmodules"),
	} {
		if _, err := os.Lstat(made); err == nil {
			t.Errorf("%s, made by the command, is still in place", made)
		}
		if _, err := os.Lstat(made + ".keel-refused"); err != nil {
			t.Errorf("%s, made by the command, was not moved to %s.keel-refused: %v", made, made, err)
		}
		if !strings.Contains(said, "the command made "+made+", project configuration") || !strings.Contains(said, "mv "+made+".keel-refused "+made) {
			t.Errorf("the result does not name %s and how to put it back:\n%s", made, said)
		}
	}
	if got := readFile(t, filepath.Join(w.ws, "sub", ".claude.keel-refused", "skills", "x", "SKILL.md")); got != "allowed-tools: Bash\n" {
		t.Errorf("the skill as written is not kept aside: %q", got)
	}
	if !strings.Contains(said, "inside "+filepath.Join(w.ws, "cloned")+", a repository the command cloned or made") {
		t.Errorf("the result does not say the .claude moved aside lies in a repository the command cloned:\n%s", said)
	}
	if strings.Contains(said, "inside "+w.ws+",") {
		t.Errorf("the result takes the user's workspace for a repository the command made:\n%s", said)
	}
	// Positive controls. A .gitmodules git does not read (not at the top of a working tree) stays.
	if _, err := os.Lstat(filepath.Join(w.ws, "sub", ".gitmodules")); err != nil {
		t.Errorf("sub/.gitmodules, which git does not read, was moved: %v", err)
	}
	for path, want := range map[string]string{
		filepath.Join(w.ws, "sub", "notes.md"): "notes\n", filepath.Join(w.ws, "sub", ".github", "ci.yml"): "ci\n",
		filepath.Join(w.ws, "etc", "more.json"): "more\n", filepath.Join(w.ws, "old", ".claude", "settings.json"): "{}\n",
		filepath.Join(w.ws, ".claude", "settings.json"): "{}\n", filepath.Join(w.ws, "cloned", "main.go"): "package main\n",
	} {
		if got := readFile(t, path); got != want {
			t.Errorf("%s = %q after the release, want %q", path, got, want)
		}
	}
	for _, kept := range []string{filepath.Join(w.ws, "old", ".claude"), filepath.Join(w.ws, ".claude"), filepath.Join(w.ws, "sub", ".github")} {
		if _, err := os.Lstat(kept + ".keel-refused"); err == nil || strings.Contains(said, kept+",") {
			t.Errorf("%s, not made by the command, was moved aside:\n%s", kept, said)
		}
	}

	// A second one where the first went aside goes beside it; a command that makes none is
	// told nothing.
	if _, said := w.say(t, "mkdir -p sub/.claude && echo '{}' > sub/.claude/settings.json"); !strings.Contains(said, filepath.Join(w.ws, "sub", ".claude.keel-refused.2")) {
		t.Errorf("a second sub/.claude was not moved to sub/.claude.keel-refused.2:\n%s", said)
	}
	if _, said := w.say(t, "echo x > sub/notes.md"); said != "" {
		t.Errorf("a command that made no configuration was told:\n%s", said)
	}

	// One hidden below a directory the command makes unlistable (a session started below it
	// passes through all the same) goes aside: with that directory where keel cannot list it,
	// on its own where keel can all the same (as root).
	hide := filepath.Join(w.ws, "hide")
	t.Cleanup(func() { os.Chmod(hide+".keel-refused", 0o755); os.Chmod(hide, 0o755) })
	_, said = w.say(t, "mkdir -p hide/x/.claude && echo '{}' > hide/x/.claude/settings.json && chmod 111 hide")
	if _, err := os.Lstat(filepath.Join(hide, "x", ".claude")); err == nil {
		t.Errorf("hide/x/.claude, made below a directory the command made unlistable, is still in place")
	}
	want := "the command made " + hide + ", a directory keel cannot list"
	if _, err := os.ReadDir(hide); err == nil {
		want = "the command made " + filepath.Join(hide, "x", ".claude") + ", project configuration"
	}
	if !strings.Contains(said, want) || strings.Contains(said, "stopped at one of its bounds") {
		t.Errorf("the result does not say %q, or says the search stopped:\n%s", want, said)
	}
}

// TestMadeGoBinMovedAside: with the home directory the workspace and no ~/go, the ~/go/bin a
// command makes (where `go install` would put a git of its own, on PATH) is moved aside as it
// is released, the result saying so; the rest of the ~/go it made stays.
func TestMadeGoBinMovedAside(t *testing.T) { forEachLauncher(t, testMadeGoBinMovedAside) }

func testMadeGoBinMovedAside(t *testing.T) {
	home := filepath.Join(sandbox.VisibleDir(t), "home")
	write(t, filepath.Join(home, "proj", "main.go"), "package main\n")
	t.Setenv("HOME", home)
	for _, k := range []string{"GOBIN", "GOPATH"} {
		t.Setenv(k, "")
	}
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{home}, Home: home, KeelHome: filepath.Join(home, ".keel")}
	w := &world{ws: home, s: sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})}
	skipWithoutSandbox(t, w.s)
	out, said := w.say(t, "mkdir -p go/bin go/pkg/mod/x && echo pwned > go/bin/git && echo kept > go/pkg/mod/x/f && echo DONE")
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	bin := filepath.Join(home, "go", "bin")
	if _, err := os.Lstat(bin); err == nil {
		t.Errorf("%s, made by the command, is still in place", bin)
	}
	if got := readFile(t, filepath.Join(bin+".keel-refused", "git")); got != "pwned\n" {
		t.Errorf("%s as the command made it is not kept aside: %q", bin, got)
	}
	if !strings.Contains(said, "the command made "+bin+", a directory `go install` puts programs in") || !strings.Contains(said, "mv "+bin+".keel-refused "+bin) {
		t.Errorf("the result does not name %s and how to put it back:\n%s", bin, said)
	}
	if got := readFile(t, filepath.Join(home, "go", "pkg", "mod", "x", "f")); got != "kept\n" {
		t.Errorf("the rest of ~/go was not kept: %q", got)
	}
	// ~/go is there now: from the next command on, a ~/go/bin it makes goes aside too.
	if _, said := w.say(t, "mkdir -p go/bin && echo pwned > go/bin/go"); !strings.Contains(said, bin+".keel-refused.2") {
		t.Errorf("a second ~/go/bin was not moved aside:\n%s", said)
	}
}
