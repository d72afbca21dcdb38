package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Errorf("content = %q, want %q", got, content)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}

func TestWriteFileMissingDir(t *testing.T) {
	if err := WriteFile(filepath.Join(t.TempDir(), "no", "f"), []byte("x"), 0o600); err == nil {
		t.Error("no error writing into a missing directory")
	}
}

func TestReplaceKeepsModeAndSwapsTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(p, []byte("old"), 0o750); err != nil {
		t.Fatal(err)
	}
	// A reader that opened the file before keeps seeing the old content: the file was
	// swapped, not truncated and rewritten, so no moment exists when it is empty.
	reader, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("new content"), info); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "new content" {
		t.Errorf("content = %q, want the new one", got)
	}
	if old, _ := io.ReadAll(reader); string(old) != "old" {
		t.Errorf("the file opened before reads %q, want the old content: it was rewritten in place", old)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != info.Mode() {
		t.Errorf("mode = %v, want %v kept", after.Mode(), info.Mode())
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}

func TestReplaceRefusesAHardLinkedFile(t *testing.T) {
	dir := t.TempDir()
	p, other := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(p, []byte("shared"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, other); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("new"), info); !errors.Is(err, ErrNotReplaceable) {
		t.Fatalf("Replace of a hard-linked file = %v, want ErrNotReplaceable", err)
	}
	for _, f := range []string{p, other} {
		if got, _ := os.ReadFile(f); string(got) != "shared" {
			t.Errorf("%s = %q after a refused Replace, want it unchanged", filepath.Base(f), got)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("temp files left behind: %v", entries)
	}
}

func TestCreateHonoursTheUmask(t *testing.T) {
	dir := t.TempDir()
	p, plain := filepath.Join(dir, "new.txt"), filepath.Join(dir, "plain.txt")
	if err := Create(p, []byte("whole"), 0o666); err != nil {
		t.Fatal(err)
	}
	// os.WriteFile applies the umask; a new file from Create gets the mode it would.
	if err := os.WriteFile(plain, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	got, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(plain)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode() != want.Mode() {
		t.Errorf("mode = %v, want %v as os.WriteFile gives", got.Mode(), want.Mode())
	}
	if data, _ := os.ReadFile(p); string(data) != "whole" {
		t.Errorf("content = %q", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("temp files left behind: %v", entries)
	}
}
