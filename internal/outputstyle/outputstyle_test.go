package outputstyle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	user, project := filepath.Join(t.TempDir(), "user"), filepath.Join(t.TempDir(), "project")
	write(t, user, "pirate.md", "---\ndescription: Talks like a pirate\n---\nAnswer like a pirate.\n")
	write(t, user, "terse.md", "Answer in one line.\n")
	write(t, project, "pirate2.md", "---\nname: Pirate\ndescription: The project's pirate\nkeep-coding-instructions: true\n---\nAnswer like this project's pirate.\n")
	write(t, project, "empty.md", "---\nname: Empty\n---\n\n")
	write(t, project, "notes.txt", "not a style")
	styles, errs := Load([]Dir{{Path: user}, {Path: project}, {Path: filepath.Join(t.TempDir(), "missing")}})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "empty.md: no instructions") {
		t.Errorf("problems %v, want the empty style named", errs)
	}
	var got []string
	for _, s := range styles {
		got = append(got, s.Name+"|"+s.Description+"|"+s.Prompt[:min(len(s.Prompt), 40)]+"|"+map[bool]string{true: "keep", false: "replace"}[s.KeepCodingInstructions])
	}
	want := []string{
		"Explanatory|Explains its implementation choices and the codebase's patterns as it works|# Output style: Explanatory\nYou help wit|keep",
		"Learning|Works with the user: explains, and asks them to write small, meaningful pieces themselves|# Output style: Learning\nYou help with s|keep",
		"Pirate|The project's pirate|Answer like this project's pirate.|keep",
		"terse||Answer in one line.|replace",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("styles mismatch (-want +got):\n%s", diff)
	}
	for _, name := range []string{"pirate", "LEARNING", "default", ""} {
		if _, ok := Find(styles, name); !ok {
			t.Errorf("Find(%q) found nothing", name)
		}
	}
	if _, ok := Find(styles, "shakespeare"); ok {
		t.Error("found a style that does not exist")
	}
}

// TestLoadLeavesOutRefusedFiles: a style file the directory's Refuse refuses (a project's link
// to a secret) is not read, and the problem names it and why; the style beside it loads.
func TestLoadLeavesOutRefusedFiles(t *testing.T) {
	project := t.TempDir()
	write(t, project, "ok.md", "Answer briefly.\n")
	write(t, project, "leak.md", "TOKEN-SECRET\n")
	refuse := func(path string) string {
		if filepath.Base(path) == "leak.md" {
			return "a Read deny rule covers it"
		}
		return ""
	}
	styles, errs := Load([]Dir{{Path: project, Refuse: refuse}})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "leak.md is not read: a Read deny rule covers it") {
		t.Errorf("problems %v, want leak.md named as refused", errs)
	}
	if _, ok := Find(styles, "leak"); ok {
		t.Error("the refused style was loaded")
	}
	if _, ok := Find(styles, "ok"); !ok {
		t.Error("the style beside the refused one was not loaded")
	}
}
