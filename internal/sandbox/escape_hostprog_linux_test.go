package sandbox_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestEscapePathProgram: with a PATH entry inside the workspace (an activated .venv/bin), a
// command plants a `git` there; keel's own git — at the command's release and after it — is
// the one further on PATH, so the planted program never runs outside.
func TestEscapePathProgram(t *testing.T) { forEachLauncher(t, testEscapePathProgram) }

func testEscapePathProgram(t *testing.T) {
	outside := sandbox.VisibleDir(t)
	ws := t.TempDir()
	git(t, ws, "init", "-q")
	venv := filepath.Join(ws, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", venv+string(os.PathListSeparator)+os.Getenv("PATH"))
	s := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}), sandbox.Options{})
	skipWithoutSandbox(t, s)
	marker := filepath.Join(outside, "planted-git-ran")
	cmd := exec.Command("bash", "-c", `printf '#!/bin/sh\ntouch `+marker+`\nexit 1\n' > .venv/bin/git && chmod +x .venv/bin/git && echo planted`)
	cmd.Dir = ws
	run, err := s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	run.Release()
	if !strings.Contains(string(out), "planted") {
		t.Fatalf("the command did not plant its git: %s", out)
	}
	// The same PATH, spelled anew: keel looks git up again, as a new process would.
	t.Setenv("PATH", venv+string(os.PathListSeparator)+os.Getenv("PATH"))
	if _, err := (gitexec.Runner{}).Output(context.Background(), ws, "status", "--short"); err != nil {
		t.Errorf("keel's own git: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("keel ran the git a sandboxed command planted in a PATH directory inside the workspace")
	}
}

// TestEscapeHelperReplaced: keel's helper lies in the workspace (keel built into the project
// it works on). A command cannot rename a program over it, and when it is replaced all the
// same (here from outside), the next command still runs the helper keel opened, never the
// replacement.
func TestEscapeHelperReplaced(t *testing.T) { forEachLauncher(t, testEscapeHelperReplaced) }

func testEscapeHelperReplaced(t *testing.T) {
	outside := sandbox.VisibleDir(t)
	ws := t.TempDir()
	helper := filepath.Join(ws, "bin", sandbox.HelperProgram)
	copyExecutable(t, helper)
	s := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}), sandbox.Options{Executable: helper})
	skipWithoutSandbox(t, s)
	run := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = ws
		r, err := s.Confine(cmd)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := cmd.CombinedOutput()
		r.Release()
		return string(out)
	}
	marker := filepath.Join(outside, "replaced-helper-ran")
	evil := "#!/bin/sh\ntouch " + marker + "\nexit 1\n"
	out := run(`printf '` + strings.ReplaceAll(evil, "\n", `\n`) + `' > bin/new && chmod +x bin/new && mv -f bin/new bin/` + sandbox.HelperProgram + ` 2>&1; echo tried`)
	if !strings.Contains(out, "tried") {
		t.Fatalf("the first command did not run: %s", out)
	}
	if b, err := os.ReadFile(helper); err == nil && string(b) == evil {
		t.Fatal("a command renamed its program over keel's helper in the workspace")
	}
	// Replaced from outside: what a command could have done where the path is not protected.
	if err := os.WriteFile(helper+".new", []byte(evil), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(helper+".new", helper); err != nil {
		t.Fatal(err)
	}
	if out := run("echo second-ran"); !strings.Contains(out, "second-ran") {
		t.Errorf("the next command did not run under the helper keel opened: %q", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("keel ran the program renamed over its helper")
	}
}

// copyExecutable copies this test binary, which can be the helper (TestMain calls Dispatch), to
// dst.
func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorHostPrograms: `keel doctor` names the PATH entries commands can write and keel's
// executables made read-only where a writable root holds them.
func TestDoctorHostPrograms(t *testing.T) {
	ws := t.TempDir()
	venv := filepath.Join(ws, ".venv", "bin")
	if err := os.MkdirAll(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", venv+string(os.PathListSeparator)+os.Getenv("PATH"))
	helper := filepath.Join(ws, "bin", sandbox.HelperProgram)
	copyExecutable(t, helper)
	s := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}), sandbox.Options{Executable: helper})
	var path, own string
	for _, f := range sandbox.Doctor(context.Background(), s) {
		switch f.Name {
		case "PATH":
			path = f.Status + ": " + f.Detail
		case "keel binaries":
			own = f.Detail
		}
	}
	if !strings.HasPrefix(path, "warn: ") || !strings.Contains(path, venv) {
		t.Errorf("PATH finding = %q, want a warning naming %s", path, venv)
	}
	if !strings.Contains(own, "read-only in the sandbox: ") || !strings.Contains(own, helper) {
		t.Errorf("executables finding = %q, want %s read-only", own, helper)
	}
	if got := sandbox.ExposedPath(s.Policy()); !strings.Contains(got, venv) {
		t.Errorf("ExposedPath = %q", got)
	}
}
