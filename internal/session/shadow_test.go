package session

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// treeOf is every file under dir with its mode and bytes, and every directory.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel+"/"] = info.Mode().String()
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = info.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func userUUID(t *testing.T, events []event.Event) string {
	t.Helper()
	for _, e := range events {
		if u, ok := e.(event.UserMessage); ok {
			return u.UUID
		}
	}
	t.Fatal("no user message event")
	return ""
}

// TestRewindUndoesTheShell: a turn that runs sed -i, rm and go build through Bash is
// rewound, and the directory is byte for byte (and mode for mode) what it was before the
// prompt: the edit undone, the removed file back, the built binary gone. keel rewind --diff's
// TurnDiff shows what the turn changed.
func TestRewindUndoesTheShell(t *testing.T) {
	if _, err := os.Stat(filepath.Join(os.Getenv("GOROOT"), "bin", "go")); err != nil {
		if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
			t.Skip("no go toolchain for the build in the turn")
		}
	}
	cwd := t.TempDir()
	files := map[string]string{
		"go.mod":       "module example.com/app\n\ngo 1.22\n",
		"main.go":      "package main\n\nfunc main() { println(\"old\") }\n",
		"data.txt":     "alpha old omega\n",
		"gone.txt":     "removed by the turn\n",
		"sub/keep.txt": "untouched\n",
	}
	for name, body := range files {
		p := filepath.Join(cwd, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(cwd, "data.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, cwd)

	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "change and build"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Bash", map[string]string{"command": "sed -i 's/old/new/' data.txt main.go && rm gone.txt && go build -o app . && echo built"}),
		}},
		{When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "bypassPermissions"})
	events := h.send(t, "change and build")
	uuid := userUUID(t, events)
	after := treeOf(t, cwd)
	if _, ok := after["app"]; !ok || strings.Contains(after["data.txt"], "old") {
		t.Fatalf("the turn did not run as scripted; tree after it: %v", keys(after))
	}

	diff, err := h.sess.undo.TurnDiff(t.Context(), uuid)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-alpha old omega", "+alpha new omega", "deleted file mode 100644", "gone.txt", "app"} {
		if !strings.Contains(diff, want) {
			t.Errorf("TurnDiff lacks %q:\n%s", want, diff)
		}
	}

	rep, err := h.sess.undo.Rewind(t.Context(), uuid, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Shadow == nil {
		t.Fatal("the rewind did not restore from the shadow repository")
	}
	if d := cmp.Diff(before, treeOf(t, cwd)); d != "" {
		t.Errorf("tree after rewind mismatch (-want +got):\n%s", d)
	}
	// The restore itself can be undone: the tree as it was before it is a checkpoint.
	if rep.Shadow.Before.Commit == "" {
		t.Error("the rewind kept no checkpoint of the tree before it")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
