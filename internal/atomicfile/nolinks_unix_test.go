//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestNoLinksRefusesALinkOnTheWay: a directory on the way that is a link stops the write and
// the removal (a *LinkError naming it), and nothing changes where it points; a link at the
// file's own name is replaced or removed itself, its target untouched; missing directories
// are made.
func TestNoLinksRefusesALinkOnTheWay(t *testing.T) {
	dir, outside := realDir(t), realDir(t)
	target := filepath.Join(outside, "f")
	if err := os.WriteFile(target, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "via")); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"write":       WriteNoLinks(filepath.Join(dir, "via", "f"), []byte("planted"), 0o755),
		"write below": WriteNoLinks(filepath.Join(dir, "via", "sub", "f"), []byte("planted"), 0o755),
		"remove":      RemoveNoLinks(filepath.Join(dir, "via", "f")),
		"replace":     ReplaceNoLinks(filepath.Join(dir, "via", "f"), []byte("planted"), statOf(t, target)),
		"create":      CreateNoLinks(filepath.Join(dir, "via", "g"), []byte("planted"), 0o644),
		"mkdir":       MkdirAllNoLinks(filepath.Join(dir, "via", "sub", "deeper")),
		"open":        openErr(OpenNoLinks(filepath.Join(dir, "via", "f"), os.O_RDONLY, 0)),
		"open write":  openErr(OpenNoLinks(filepath.Join(dir, "via", "f"), os.O_WRONLY|os.O_TRUNC, 0)),
	} {
		le, ok := errors.AsType[*LinkError](err)
		if !ok || le.Link != filepath.Join(dir, "via") {
			t.Errorf("%s through the link: %v, want a link error naming it", name, err)
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "outside" {
		t.Errorf("the file the link leads to: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "g")); !os.IsNotExist(err) {
		t.Errorf("a file was created through the link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); !os.IsNotExist(err) {
		t.Errorf("a directory was made through the link: %v", err)
	}

	// A link at the name itself.
	own := filepath.Join(dir, "new", "deeper", "own")
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, own); err != nil {
		t.Fatal(err)
	}
	if err := WriteNoLinks(own, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(own); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("the link at the name was not replaced by a 0600 file: %v, %v", fi, err)
	}
	if err := os.Remove(own); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, own); err != nil {
		t.Fatal(err)
	}
	if err := RemoveNoLinks(own); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "outside" {
		t.Errorf("the file the link leads to: %q, %v", b, err)
	}
	if _, err := os.Lstat(own); !os.IsNotExist(err) {
		t.Errorf("the link was not removed: %v", err)
	}

	// Missing directories are made; a missing file's removal says it does not exist.
	made := filepath.Join(dir, "a", "b", "c")
	if err := WriteNoLinks(made, []byte("c"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(made); err != nil || string(b) != "c" {
		t.Errorf("written %q, %v", b, err)
	}
	if err := RemoveNoLinks(filepath.Join(dir, "x", "y")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removing a file below a missing directory: %v", err)
	}
	if err := RemoveNoLinks(made); err != nil {
		t.Fatal(err)
	}
	if err := RemoveNoLinks(filepath.Dir(made)); err != nil {
		t.Errorf("an empty directory is removed, as os.Remove does: %v", err)
	}
}

// realDir is t.TempDir with its links resolved (macOS's /var is one).
func realDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBeneathFollowsTheRootOnly: the root may itself be reached through a link (the caller's
// choice); below it a link on the way stops RemoveBeneath and ChmodBeneath, and ChmodBeneath
// changes only a regular file.
func TestBeneathFollowsTheRootOnly(t *testing.T) {
	real, outside := realDir(t), realDir(t)
	root := filepath.Join(realDir(t), "root")
	if err := os.Symlink(real, root); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(real, "sub", "f"), filepath.Join(outside, "f")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(real, "via")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(real, "sub", "lf")); err != nil {
		t.Fatal(err)
	}
	if err := ChmodBeneath(root, filepath.Join("sub", "f"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(real, "sub", "f")); fi.Mode() != 0o600 {
		t.Errorf("chmod below a linked root: mode %v", fi.Mode())
	}
	if err := ChmodBeneath(root, filepath.Join("sub", "lf"), 0o777); !errors.Is(err, ErrNotRegular) {
		t.Errorf("chmod of a link: %v, want ErrNotRegular", err)
	}
	if _, ok := errors.AsType[*LinkError](ChmodBeneath(root, filepath.Join("via", "f"), 0o777)); !ok {
		t.Error("chmod through a link on the way was not refused")
	}
	if _, ok := errors.AsType[*LinkError](RemoveBeneath(root, filepath.Join("via", "f"))); !ok {
		t.Error("removal through a link on the way was not refused")
	}
	if fi, err := os.Stat(filepath.Join(outside, "f")); err != nil || fi.Mode() != 0o644 {
		t.Errorf("the file outside: %v, %v", fi, err)
	}
	if fi, _ := os.Stat(filepath.Join(real, "sub", "f")); fi.Mode() != 0o600 {
		t.Errorf("the link's target changed: mode %v", fi.Mode())
	}
	if err := RemoveBeneath(root, filepath.Join("sub", "f")); err != nil {
		t.Fatal(err)
	}
}

func statOf(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// openErr is OpenNoLinks's error, the file it opened closed.
func openErr(f *os.File, err error) error {
	if f != nil {
		f.Close()
	}
	return err
}

// TestOpenNoLinksRefusesALinkAtTheName: the file itself, when a link, is not followed.
func TestOpenNoLinksRefusesALinkAtTheName(t *testing.T) {
	dir := realDir(t)
	target := filepath.Join(dir, "secret")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenNoLinks(filepath.Join(dir, "link"), os.O_RDONLY, 0); err == nil {
		f.Close()
		t.Fatal("OpenNoLinks followed a link at the file's name")
	}
	f, err := OpenNoLinks(target, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
