//go:build unix

package snapshot

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRestoreRefusesALinkOnTheWay is adversary8's H2: a command writes d/git, the Edit tool
// changes it (the file history keeps the command's bytes and mode), and a later command
// replaces d with a link to a directory outside. Restore writes nothing through the link, and
// deletes nothing through it either (a file the Write tool created beside it); its error
// says why. A file elsewhere is restored as usual.
func TestRestoreRefusesALinkOnTheWay(t *testing.T) {
	work, outside := realTempDir(t), realTempDir(t)
	d := filepath.Join(work, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	script, created, plain := filepath.Join(d, "git"), filepath.Join(d, "new.txt"), filepath.Join(work, "plain.txt")
	for p, body := range map[string]string{script: "#!/bin/sh\n# helper\n", plain: "before\n"} {
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(script, 0o755|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	// The same name outside: a removal through the link would take it.
	if err := os.WriteFile(filepath.Join(outside, "new.txt"), []byte("the user's"), 0o644); err != nil {
		t.Fatal(err)
	}

	s, err := Open(t.TempDir(), "sess")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin("turn-0"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{script, created, plain} {
		if err := s.Track(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("after\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(d, d+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, d); err != nil {
		t.Fatal(err)
	}

	rep, err := s.Restore("turn-0")
	for _, want := range []string{script + " not restored: a link on the way (" + d + ")", created + " not deleted: a link on the way (" + d + ")"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
	if want := []string{script, created}; !slices.Equal(rep.Failed, want) {
		t.Errorf("failed %v, want %v", rep.Failed, want)
	}
	if !slices.Equal(rep.Restored, []string{plain}) {
		t.Errorf("restored %v, want only %s", rep.Restored, plain)
	}
	if got := tree(t, outside); len(got) != 1 || got["new.txt -rw-r--r--"] != "the user's" {
		t.Errorf("the directory the link names was changed: %v", got)
	}
	if b, _ := os.ReadFile(plain); string(b) != "before\n" {
		t.Errorf("plain.txt is %q after the restore", b)
	}
}

// TestRestoreDropsSetuid: a file's mode comes back without setuid and setgid (its content and
// mode may be a command's, and keel would be the one setting the bit), and a directory the
// file was in, since removed, is made again.
func TestRestoreDropsSetuid(t *testing.T) {
	work := realTempDir(t)
	p := filepath.Join(work, "sub", "tool")
	if err := os.Mkdir(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755|fs.ModeSetuid|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.TempDir(), "sess")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin("turn-0"); err != nil {
		t.Fatal(err)
	}
	if err := s.Track(p); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Restore("turn-0"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o755 {
		t.Errorf("restored with mode %v, want -rwxr-xr-x", fi.Mode())
	}
}

// TestTrackCopiesNoFileThroughALink: Track keeps the content of the file the gate checked for
// an edit, read without following a link. A command that swapped a link in for the file, or
// for a directory on its way, just before the edit would otherwise have keel copy the file the
// link leads to (a masked secret) into the file history, and a rewind would write it back into
// the workspace (adversary10 N6, the edit's snapshot).
func TestTrackCopiesNoFileThroughALink(t *testing.T) {
	work, outside := realTempDir(t), realTempDir(t)
	secret := filepath.Join(outside, "k.txt")
	if err := os.WriteFile(secret, []byte("TOPSECRET-123"), 0o600); err != nil {
		t.Fatal(err)
	}
	named, dir := filepath.Join(work, "e.txt"), filepath.Join(work, "d")
	if err := os.Symlink(secret, named); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	s, err := Open(home, "sess")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin("turn-0"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{named, filepath.Join(dir, "k.txt")} {
		if err := s.Track(p); err == nil {
			t.Errorf("Track(%s) through a link: no error", p)
		}
	}
	err = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "TOPSECRET") {
			t.Errorf("the file history holds the secret in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
