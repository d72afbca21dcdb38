//go:build unix

package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestRewindWritesNothingThroughALinkACommandMade is adversary8's H2 end to end: a command
// writes d/git, the Edit tool changes it (so the file history holds the command's script and
// its mode), the Write tool creates d/victim.txt, and a later command swaps d for a link to a
// directory outside (standing for ~/.local/bin) holding a victim.txt of its own. Rewinding
// the turn's code writes and deletes nothing there and says why; the shadow restore still
// puts the directory back as the prompt found it, the link gone.
func TestRewindWritesNothingThroughALinkACommandMade(t *testing.T) {
	cwd, outside := realTemp(t), realTemp(t)
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, cwd)
	// A file outside of the name the turn's Write creates: the rewind's deletion must not take it.
	if err := os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("USER DATA"), 0o644); err != nil {
		t.Fatal(err)
	}
	outsideBefore := treeOf(t, outside)

	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "go"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{
			"command": `mkdir -p d && printf '#!/bin/sh\n# helper\nexec git "$@"\n' > d/git && chmod 755 d/git && echo MADE`})}},
		{When: scripted.Match{Contains: "MADE"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "d/git"})}},
		{When: scripted.Match{ToolResult: "Read"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Edit",
			map[string]string{"file_path": "d/git", "old_string": "# helper", "new_string": "# helper v2"})}},
		{When: scripted.Match{ToolResult: "Edit"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Write",
			map[string]string{"file_path": "d/victim.txt", "content": "made by the turn\n"})}},
		{When: scripted.Match{ToolResult: "Write"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{
			"command": "mv d d.old && ln -s " + outside + " d && echo SWAPPED"})}},
		{When: scripted.Match{Contains: "SWAPPED"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "bypassPermissions"})
	uuid := userUUID(t, h.send(t, "go"))
	if fi, err := os.Lstat(filepath.Join(cwd, "d")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the turn did not run as scripted: d is %v, %v; tree %v", fi, err, keys(treeOf(t, cwd)))
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "d.old", "git")); !strings.Contains(string(b), "# helper v2") {
		t.Fatalf("the Edit did not change d/git: %q", b)
	}

	rep, err := h.sess.undo.Rewind(t.Context(), uuid, true, false)
	script, victim, link := filepath.Join(cwd, "d", "git"), filepath.Join(cwd, "d", "victim.txt"), filepath.Join(cwd, "d")
	for _, want := range []string{script + " not restored: a link on the way (" + link + ")", victim + " not deleted: a link on the way (" + link + ")"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rewind: %v, want it to say %q", err, want)
		}
	}
	if !cmp.Equal(rep.Files.Failed, []string{script, victim}) || len(rep.Files.Restored)+len(rep.Files.Deleted) != 0 {
		t.Errorf("file history: failed %v, restored %v, deleted %v", rep.Files.Failed, rep.Files.Restored, rep.Files.Deleted)
	}
	if d := cmp.Diff(outsideBefore, treeOf(t, outside)); d != "" {
		t.Errorf("the rewind changed the directory the link names (-want +got):\n%s", d)
	}
	if rep.Shadow == nil {
		t.Fatal("the shadow restore did not run after the file history's refusal")
	}
	if d := cmp.Diff(before, treeOf(t, cwd)); d != "" {
		t.Errorf("tree after rewind mismatch (-want +got):\n%s", d)
	}
}

// realTemp is t.TempDir with its links resolved (macOS's /var is one), as the tools see it.
func realTemp(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
