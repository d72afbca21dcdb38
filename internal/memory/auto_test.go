package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
)

func TestAutoDirIsSharedByTheWorktreesOfARepository(t *testing.T) {
	repo := gittest.New(t)
	home := t.TempDir()
	want := filepath.Join(home, "projects", strings.ReplaceAll(repo.Dir, "/", "-"), "memory")
	wt := filepath.Join(t.TempDir(), "feature")
	repo.Git("worktree", "add", "-q", "-b", "feature", wt)
	repo.Write("sub/dir/file.txt", "x")
	for _, cwd := range []string{repo.Dir, filepath.Join(repo.Dir, "sub", "dir"), wt} {
		if got := AutoDir(home, cwd); got != want {
			t.Errorf("AutoDir(%s) = %s, want %s", cwd, got, want)
		}
	}
	outside := t.TempDir()
	if got, want := AutoDir(home, outside), filepath.Join(home, "projects", strings.ReplaceAll(outside, "/", "-"), "memory"); got != want {
		t.Errorf("outside a repository: %s, want %s", got, want)
	}
}

// TestAutoDirIgnoresAForeignDotGitFile: a .git file anyone could have written (a sandboxed
// command in the project) that names another repository's worktree, that repository's git
// directory, or a git directory of its own whose commondir names the other repository's, does
// not make a session started beside it load that repository's auto memory: the directory is
// its own root. The worktree's own .git file still leads to the repository.
func TestAutoDirIgnoresAForeignDotGitFile(t *testing.T) {
	other := gittest.New(t)
	home := t.TempDir()
	otherMemory := AutoDir(home, other.Dir)
	wt := filepath.Join(t.TempDir(), "w1")
	other.Git("worktree", "add", "-q", "-b", "w1", wt)
	if got := AutoDir(home, wt); got != otherMemory {
		t.Fatalf("the real worktree's memory is %s, want %s", got, otherMemory)
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(ws, "fakegit")
	for name, body := range map[string]string{"commondir": filepath.Join(other.Dir, ".git") + "\n", "gitdir": filepath.Join(ws, "sub3", ".git") + "\n", "HEAD": "ref: refs/heads/main\n"} {
		if err := os.MkdirAll(fake, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fake, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for sub, gitdir := range map[string]string{
		"sub1": filepath.Join(other.Dir, ".git", "worktrees", "w1"),
		"sub2": filepath.Join(other.Dir, ".git"),
		"sub3": fake,
	} {
		dir := filepath.Join(ws, sub)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(home, "projects", strings.ReplaceAll(dir, "/", "-"), "memory")
		if got := AutoDir(home, dir); got != want {
			t.Errorf("%s (gitdir: %s): memory %s, want its own %s", sub, gitdir, got, want)
		}
	}
}

func TestOpenAutoRefusesADirectoryItCannotWrite(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenAuto(filepath.Join(blocker, "memory"))
	if err == nil || !strings.Contains(err.Error(), "cannot be created") || !strings.Contains(err.Error(), `"autoMemoryEnabled": false`) {
		t.Errorf("memory directory below a file: %v", err)
	}
	if os.Geteuid() == 0 {
		return // root writes through any mode
	}
	ro := filepath.Join(t.TempDir(), "memory")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenAuto(ro); err == nil || !strings.Contains(err.Error(), "is not writable") {
		t.Errorf("read-only memory directory: %v", err)
	}
}

func TestReadIndex(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("- note " + string(rune('a'+i%26)) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, content string
		wantLines     int
		truncated     bool
	}{
		{"short", lines(3), 3, false},
		{"exactly the limit", lines(AutoIndexLines), AutoIndexLines, false},
		{"too many lines", lines(AutoIndexLines + 50), AutoIndexLines, true},
		{"too many bytes", strings.Repeat(strings.Repeat("x", 1000)+"\n", 40), 25, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := OpenAuto(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if idx, err := a.ReadIndex(); err != nil || idx != (Index{}) {
				t.Fatalf("no index yet: %+v, %v", idx, err)
			}
			if err := os.WriteFile(filepath.Join(a.Dir, AutoIndexName), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			idx, err := a.ReadIndex()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(idx.Text, "\n") + 1; got != tc.wantLines || idx.Truncated != tc.truncated {
				t.Errorf("%d lines, truncated %v; want %d, %v", got, idx.Truncated, tc.wantLines, tc.truncated)
			}
			if len(idx.Text) > AutoIndexBytes || !strings.HasPrefix(tc.content, idx.Text) {
				t.Errorf("index text is not the file's head within %d bytes", AutoIndexBytes)
			}
		})
	}
}
