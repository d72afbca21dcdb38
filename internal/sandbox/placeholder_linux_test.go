package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPlaceholdersShared: two holders of the same placeholder (two keel processes in one
// workspace: flock tells them apart as it would two processes) — the first to let go leaves
// it for the other, the last removes it; a placeholder a killed keel left is taken over and
// removed; a real empty directory is neither.
func TestPlaceholdersShared(t *testing.T) {
	ws := t.TempDir()
	real := filepath.Join(ws, ".claude")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	p := NewPolicy(Input{Mode: ModeWorkspaceWrite, Dirs: []string{ws}})
	mcp := filepath.Join(ws, ".mcp.json")
	a, b := New(p, Options{Executable: "/nonexistent"}), New(p, Options{Executable: "/nonexistent"})
	ha, err := a.hold(p.absentReadOnly())
	if err != nil || !slices.Contains(ha, mcp) || slices.Contains(ha, real) {
		t.Fatalf("a holds %v (%v)", ha, err)
	}
	hb, err := b.hold(p.absentReadOnly())
	if err != nil || !slices.Contains(hb, mcp) {
		t.Fatalf("b holds %v (%v)", hb, err)
	}
	a.release(ha)
	if _, err := os.Lstat(mcp); err != nil {
		t.Fatal("the placeholder went while b still holds it")
	}
	b.release(hb)
	if _, err := os.Lstat(mcp); err == nil {
		t.Error("the last holder left the placeholder behind")
	}

	if err := os.Mkdir(mcp, 0o555); err != nil { // left by a keel that was killed
		t.Fatal(err)
	}
	h, err := a.hold(p.absentReadOnly())
	if err != nil || !slices.Contains(h, mcp) {
		t.Fatalf("a stale placeholder was not taken over: %v (%v)", h, err)
	}
	a.release(h)
	if _, err := os.Lstat(mcp); err == nil {
		t.Error("a stale placeholder stays")
	}
	if _, err := os.Lstat(real); err != nil {
		t.Error("a real empty directory was removed")
	}
}

// TestPlaceholdersNotNested: an absent always-read-only path below another one (a settings
// file in .claude/) gets no placeholder of its own — the outer one covers it — and nothing
// is left behind: a placeholder made inside another kept that one from being removed (and
// failed outright for a user who cannot write into the read-only placeholder).
func TestPlaceholdersNotNested(t *testing.T) {
	ws := t.TempDir()
	p := NewPolicy(Input{Mode: ModeWorkspaceWrite, Dirs: []string{ws}, Protect: []string{filepath.Join(ws, ".claude", "settings.json")}})
	s := New(p, Options{Executable: "/nonexistent"})
	held, err := s.hold(p.absentReadOnly())
	if err != nil || slices.Contains(held, filepath.Join(ws, ".claude", "settings.json")) || !slices.Contains(held, filepath.Join(ws, ".claude")) {
		t.Fatalf("held %v (%v)", held, err)
	}
	s.release(held)
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestPlaceholdersOfAnotherWorkspace: two keel processes whose writable roots overlap
// (teammates in w1 and w2, both allowed to write their shared parent). The .git placeholders
// w2's command holds are no repository to w1: w1 protects no configuration inside them — it
// did, and its command failed when w2 let go of the placeholder before bubblewrap bound it
// ("Can't get type of source …/w2/.git/config") — and when both let go nothing is left.
func TestPlaceholdersOfAnotherWorkspace(t *testing.T) {
	root := t.TempDir()
	w1, w2 := filepath.Join(root, "w1"), filepath.Join(root, "w2")
	for _, d := range []string{w1, w2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p2 := NewPolicy(Input{Mode: ModeWorkspaceWrite, Dirs: []string{w2, root}}).Complete()
	s2 := New(p2, Options{Executable: "/nonexistent"})
	h2, err := s2.hold(p2.absentReadOnly())
	if err != nil || !slices.Contains(h2, filepath.Join(w2, ".git")) || !slices.Contains(h2, filepath.Join(root, ".git")) {
		t.Fatalf("w2 holds %v (%v)", h2, err)
	}

	p1 := NewPolicy(Input{Mode: ModeWorkspaceWrite, Dirs: []string{w1, root}}).Complete()
	if len(p1.GitDirs) != 0 {
		t.Errorf("w1 takes w2's placeholders for repositories: %v", p1.GitDirs)
	}
	for _, r := range p1.ReadOnly {
		if within(r, filepath.Join(w2, ".git")) && r != filepath.Join(w2, ".git") || within(r, filepath.Join(root, ".git")) && r != filepath.Join(root, ".git") {
			t.Errorf("w1 protects %s, inside a placeholder", r)
		}
	}
	if len(p1.Warnings) != 0 {
		t.Errorf("warnings: %v", p1.Warnings)
	}
	s1 := New(p1, Options{Executable: "/nonexistent"})
	h1, err := s1.hold(p1.absentReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	s2.release(h2)
	if _, err := os.Lstat(filepath.Join(root, ".git")); err != nil {
		t.Error("the shared placeholder went while w1 still holds it")
	}
	s1.release(h1)
	for _, d := range []string{root, w1, w2} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Name() != "w1" && e.Name() != "w2" {
				t.Errorf("left behind in %s: %s", d, e.Name())
			}
		}
	}
}
