package builtin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/permission"
)

// TestToolsOpenWhatTheCheckResolves checks that the file tools act on the path the shared
// resolver returns: ~ and $HOME are the home directory, not a directory named "~" below the
// cwd.
func TestToolsOpenWhatTheCheckResolves(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	writeFiles(t, home, map[string]string{"notes.txt": "HOME-NOTES\n"})
	writeFiles(t, cwd, map[string]string{"~/notes.txt": "DECOY\n"})
	for _, p := range []string{"~/notes.txt", "$HOME/notes.txt", "${HOME}/notes.txt"} {
		env := newEnv(t, cwd)
		res := call(t, Read(), env, readInput{FilePath: p})
		if !strings.Contains(res.ResultText(), "HOME-NOTES") {
			t.Errorf("Read %s = %q; want the home directory's file", p, res.ResultText())
		}
	}
	env := newEnv(t, cwd)
	if res := call(t, Write(), env, writeInput{FilePath: "~/new.txt", Content: "x"}); res.IsError {
		t.Fatalf("Write ~/new.txt: %s", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(home, "new.txt")); err != nil {
		t.Errorf("Write ~/new.txt did not create it in the home directory: %v", err)
	}
	res := call(t, Glob(), env, globInput{Pattern: "~/*.txt"})
	if got := res.ResultText(); !strings.Contains(got, filepath.Join(home, "notes.txt")) || strings.Contains(got, "DECOY") {
		t.Errorf("Glob ~/*.txt = %q", got)
	}
	res = call(t, Grep(GrepBuiltin, ""), env, grepInput{Pattern: "NOTES", Path: "~", OutputMode: "content"})
	if got := res.ResultText(); !strings.Contains(got, "HOME-NOTES") {
		t.Errorf("Grep in ~ = %q", got)
	}
}

// TestGlobPatternBase checks that a pattern's own base directory is where Glob searches,
// relative or absolute.
func TestGlobPatternBase(t *testing.T) {
	base := t.TempDir()
	writeFiles(t, base, map[string]string{"proj/a.go": "", "other/b.go": "", "other/deep/c.go": ""})
	env := newEnv(t, filepath.Join(base, "proj"))
	real := filepath.Dir(env.State.Cwd)
	for pattern, want := range map[string][]string{
		"../other/*.go":   {filepath.Join(real, "other", "b.go")},
		"../other/**/*":   {filepath.Join(real, "other", "b.go"), filepath.Join(real, "other", "deep", "c.go")},
		"*.go":            {filepath.Join(real, "proj", "a.go")},
		real + "/**/c.go": {filepath.Join(real, "other", "deep", "c.go")},
	} {
		got := strings.Split(call(t, Glob(), env, globInput{Pattern: pattern}).ResultText(), "\n")
		if strings.Join(sortedCopy(got), "\n") != strings.Join(sortedCopy(want), "\n") {
			t.Errorf("Glob %s = %q; want %q", pattern, got, want)
		}
	}
}

// TestSearchHidesDeniedFiles checks that Glob and Grep, with either engine, leave out what the
// gate's filter hides, and Grep does not quote it.
func TestSearchHidesDeniedFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"secrets/token.txt": "TOKEN-VALUE\n", "src/a.go": "// TOKEN-SAFE\n"})
	engines := []GrepEngine{GrepBuiltin}
	if rgAvailable() {
		engines = append(engines, GrepRipgrep)
	}
	env := newEnv(t, dir)
	secrets := filepath.Join(env.State.Cwd, "secrets")
	env.Hidden = func(p string) bool { return strings.HasPrefix(p, secrets+string(filepath.Separator)) }
	if got := call(t, Glob(), env, globInput{Pattern: "**/*"}).ResultText(); strings.Contains(got, "token") || !strings.Contains(got, "a.go") {
		t.Errorf("Glob listed %q", got)
	}
	for _, e := range engines {
		for _, mode := range []string{"content", "files_with_matches", "count"} {
			got := call(t, Grep(e, ""), env, grepInput{Pattern: "TOKEN", OutputMode: mode}).ResultText()
			if strings.Contains(got, "token") || strings.Contains(got, "TOKEN-VALUE") || !strings.Contains(got, "a.go") {
				t.Errorf("engine %d, %s: Grep returned %q", e, mode, got)
			}
		}
	}
}

func rgAvailable() bool {
	_, err := exec.LookPath("rg")
	return err == nil
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestSearchHonoursAskRules: with `ask Read(./secrets/**)`, Grep from the root neither quotes
// the secret nor lists it, and Glob does not list it; both say what they left out and that
// reading it asks. A file a deny rule covers is left out without a word; a hard link to it
// elsewhere is left out too. Other files are found as before.
func TestSearchHonoursAskRules(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"secrets/token.txt": "TOKEN-VALUE\n", "denied/key.txt": "TOKEN-KEY\n", "src/a.go": "// TOKEN-SAFE\n"})
	env := newEnv(t, dir)
	if err := os.Link(filepath.Join(env.State.Cwd, "denied", "key.txt"), filepath.Join(env.State.Cwd, "src", "alias.txt")); err != nil {
		t.Fatal(err)
	}
	src := permission.Source{Name: "project", Dir: env.State.Cwd}
	ask, err := permission.ParseRule("Read(./secrets/**)", permission.Ask, src)
	if err != nil {
		t.Fatal(err)
	}
	deny, err := permission.ParseRule("Read(./denied/**)", permission.Deny, src)
	if err != nil {
		t.Fatal(err)
	}
	checker := permission.New(permission.Config{Policy: permission.Policy{Mode: permission.ModeDefault,
		Rules: []permission.Rule{ask, deny}, Dirs: []string{env.State.Cwd}}})
	engines := []GrepEngine{GrepBuiltin}
	if rgAvailable() {
		engines = append(engines, GrepRipgrep)
	}
	check := func(what, got string) {
		t.Helper()
		if strings.Contains(got, "TOKEN-VALUE") || strings.Contains(got, "TOKEN-KEY") || strings.Contains(got, "alias") ||
			strings.Contains(got, "key.txt") || !strings.Contains(got, "a.go") {
			t.Errorf("%s returned %q", what, got)
		}
		if !strings.Contains(got, "Left out of this search") || !strings.Contains(got, "secrets/token.txt") || !strings.Contains(got, "Read(./secrets/**)") {
			t.Errorf("%s does not say what the ask rule left out: %q", what, got)
		}
	}
	env.Hidden, env.HiddenNote = checker.SearchFilter()
	check("Glob", call(t, Glob(), env, globInput{Pattern: "**/*"}).ResultText())
	for _, e := range engines {
		for _, mode := range []string{"content", "files_with_matches", "count"} {
			env.Hidden, env.HiddenNote = checker.SearchFilter()
			check(fmt.Sprintf("engine %d, Grep %s", e, mode), call(t, Grep(e, ""), env, grepInput{Pattern: "TOKEN", OutputMode: mode}).ResultText())
		}
	}
}
