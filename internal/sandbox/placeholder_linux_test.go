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
