package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefuseMadeComparesWithTheStart: project configuration made after the policy's search but
// before a command started (the user's, made outside meanwhile) is left where it is, and so is
// one made while it ran where it could not write (keel's own, in .keel/); one made
// while the command ran goes aside at its release even when a search since (another command's
// release, while this one ran in the background) found it and protects it for the commands
// after.
func TestRefuseMadeComparesWithTheStart(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := New(NewPolicy(Input{Mode: ModeWorkspaceWrite, Dirs: []string{ws}}), Options{Executable: "/nonexistent"})
	p := s.complete()
	mkdir := func(rel string) string {
		t.Helper()
		path := filepath.Join(ws, rel)
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	none := func(string) bool { return false }

	late := mkdir("late/.claude")
	var older plantWatch
	older.noteMade(p)
	// As if the command had started well after late/.claude was made.
	older.began = older.began.Add(2 * madeSlack)
	if said := older.refuseMade(s, p.searchRepos(p.gitRoots), none); len(said) > 0 {
		t.Errorf("configuration made before the command started was refused: %q", said)
	}
	if _, err := os.Lstat(late); err != nil {
		t.Errorf("late/.claude was moved: %v", err)
	}

	// What keel makes meanwhile where the command could not write (a worktree for an agent,
	// .keel/worktrees/<name>, with the project's .claude) stays.
	s.refresh() // late/.claude is the policy's now
	p = s.complete()
	var during plantWatch
	during.noteMade(p)
	keels := mkdir(".keel/worktrees/agent/.claude")
	if said := during.refuseMade(s, p.searchRepos(p.gitRoots), none); len(said) > 0 {
		t.Errorf("configuration made where the command could not write was refused: %q", said)
	}
	if _, err := os.Lstat(keels); err != nil {
		t.Errorf(".keel/worktrees/agent/.claude was moved: %v", err)
	}

	var bg plantWatch
	bg.noteMade(s.complete())
	made := mkdir("bg/.claude")
	s.refresh()
	if s.complete().WritableAt(filepath.Join(made, "x")) {
		t.Fatalf("the search after bg/.claude was made does not protect it")
	}
	said := strings.Join(bg.refuseMade(s, p.searchRepos(p.gitRoots), none), "\n")
	if !strings.Contains(said, "the command made "+made+",") {
		t.Errorf("bg/.claude, made while the command ran, was not refused: %q", said)
	}
	if _, err := os.Lstat(made + refusedSuffix); err != nil {
		t.Errorf("bg/.claude was not moved aside: %v", err)
	}

	// A directory the search could not list (made so by the command, for a user without
	// root's powers): one the command made goes aside whole; past one of the user's the
	// result says, once a session, that the search did not look.
	s.refresh()
	p = s.complete()
	var blind plantWatch
	blind.noteMade(p)
	hidden := mkdir("hidden")
	g := p.searchRepos(p.gitRoots)
	g.unlisted = append(g.unlisted, hidden)
	said = strings.Join(blind.refuseMade(s, g, none), "\n")
	if !strings.Contains(said, "the command made "+hidden+", a directory keel cannot list") || strings.Contains(said, "bounds") {
		t.Errorf("a directory the command made unlistable was not moved aside alone: %q", said)
	}
	if _, err := os.Lstat(hidden + refusedSuffix); err != nil {
		t.Errorf("hidden was not moved aside: %v", err)
	}
	blind.began = blind.began.Add(2 * madeSlack)
	g.unlisted = []string{filepath.Dir(late)}
	for i, want := range []bool{true, false} {
		said = strings.Join(blind.refuseMade(s, g, none), "\n")
		if strings.Contains(said, "or at a directory keel cannot list") != want {
			t.Errorf("release %d past a directory of the user's keel cannot list said %q, want the sentence on the first only", i+1, said)
		}
	}
	if _, err := os.Lstat(late); err != nil {
		t.Errorf("the user's directory keel cannot list was moved: %v", err)
	}
}
