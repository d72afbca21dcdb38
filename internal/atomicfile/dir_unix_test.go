//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestDirFollowsNoLink: a held directory lists, describes and opens what is in it, and a
// link in it — to a directory or a file elsewhere — is a link: opening it as a directory or
// a file is a *LinkError, its entry's Info describes the link, and nothing where it points is
// read. A link on the way to the directory itself is refused too, and a name that is not one
// entry (.., a/b) opens nothing.
func TestDirFollowsNoLink(t *testing.T) {
	dir, outside := realDir(t), realDir(t)
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"dl": outside, "fl": filepath.Join(outside, "secret")} {
		if err := os.Symlink(target, filepath.Join(dir, "sub", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dir, filepath.Join(outside, "back")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDirNoLinks(filepath.Join(outside, "back", "sub")); !isLinkError(err) {
		t.Errorf("opened a directory through a link on the way: %v", err)
	}
	d, err := OpenDirNoLinks(filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		info, err := e.Info()
		if err != nil {
			t.Fatalf("info of %s: %v", e.Name(), err)
		}
		if want := e.Name() != "f"; (info.Mode()&fs.ModeSymlink != 0) != want {
			t.Errorf("%s described as %v", e.Name(), info.Mode())
		}
	}
	if got := filepath.Join(names...); got != filepath.Join("dl", "f", "fl") {
		t.Errorf("entries %v, want dl, f, fl in order", names)
	}
	if sub, err := d.OpenDir("dl"); err == nil {
		t.Error("opened the linked directory")
		sub.Close()
	} else if !isLinkError(err) {
		t.Errorf("opening the linked directory: %v, want a link error", err)
	}
	if f, err := d.OpenFile("fl", os.O_RDONLY); err == nil {
		b, _ := io.ReadAll(f)
		t.Errorf("opened the linked file (%q)", b)
		f.Close()
	} else if !isLinkError(err) {
		t.Errorf("opening the linked file: %v, want a link error", err)
	}
	for _, name := range []string{"..", "dl/secret", ""} {
		if f, err := d.OpenFile(name, os.O_RDONLY); err == nil {
			t.Errorf("opened %q", name)
			f.Close()
		}
	}
	f, err := d.OpenFile("f", os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "mine" {
		t.Errorf("read %q, %v", b, err)
	}
}

func isLinkError(err error) bool {
	_, ok := errors.AsType[*LinkError](err)
	return ok
}
