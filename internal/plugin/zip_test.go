package plugin

import (
	"archive/zip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeZip archives every file below dir whose path (relative to dir) starts with prefix.
func writeZip(t *testing.T, archive, dir, prefix string) {
	t.Helper()
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	w := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !strings.HasPrefix(filepath.ToSlash(rel), prefix) {
			return nil
		}
		out, err := w.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestUnzipRefusesEscapes(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "evil.zip")
	f, _ := os.Create(archive)
	w := zip.NewWriter(f)
	out, _ := w.Create("../escape.txt")
	_, _ = out.Write([]byte("x"))
	_ = w.Close()
	_ = f.Close()
	cache := t.TempDir()
	if _, err := unzipPlugin(archive, cache); err == nil || !strings.Contains(err.Error(), "leaves the archive's folder") {
		t.Errorf("unzip: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "escape.txt")); err == nil {
		t.Error("the entry escaped")
	}
}
