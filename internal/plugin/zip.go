package plugin

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxZipBytes bounds what one plugin archive may unpack to.
const maxZipBytes = 512 << 20

// unzipPlugin unpacks the archive at zipPath into a folder below cacheDir named by the
// archive's digest (so the same archive unpacks once) and returns the plugin's root: the
// archive's top, or its single top-level folder when everything sits in one.
func unzipPlugin(zipPath, cacheDir string) (string, error) {
	data, err := os.ReadFile(zipPath)
	if err != nil {
		return "", fmt.Errorf("read plugin archive: %w", err)
	}
	sum := sha256.Sum256(data)
	dest := filepath.Join(cacheDir, hex.EncodeToString(sum[:8]))
	if !isDir(dest) {
		if err := extractZip(zipPath, dest); err != nil {
			return "", err
		}
	}
	return archiveRoot(dest), nil
}

// extractZip unpacks into a fresh folder beside dest and renames it into place, so a folder at
// dest is always complete.
func extractZip(zipPath, dest string) error {
	r, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("open plugin archive %s: %w", zipPath, err)
	}
	defer r.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dest), err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".unzip-")
	if err != nil {
		return fmt.Errorf("unpack plugin archive: %w", err)
	}
	defer os.RemoveAll(tmp)
	var total int64
	for _, f := range r.File {
		name := filepath.FromSlash(f.Name)
		target := filepath.Join(tmp, name)
		if !strings.HasPrefix(target, tmp+string(filepath.Separator)) {
			return fmt.Errorf("plugin archive %s: entry %q leaves the archive's folder", zipPath, f.Name)
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("unpack %s: %w", f.Name, err)
			}
			continue
		case !mode.IsRegular():
			continue // symlinks and devices are not unpacked
		}
		total += int64(f.UncompressedSize64)
		if total > maxZipBytes {
			return fmt.Errorf("plugin archive %s unpacks to more than %d MiB", zipPath, maxZipBytes>>20)
		}
		if err := writeZipFile(f, target, mode.Perm()|0o600); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dest); err != nil && !isDir(dest) {
		return fmt.Errorf("unpack plugin archive: %w", err)
	}
	return nil
}

func writeZipFile(f *zip.File, target string, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	in, err := f.Open()
	if err != nil {
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	defer in.Close()
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	if _, err := io.Copy(out, io.LimitReader(in, maxZipBytes)); err != nil {
		out.Close()
		return fmt.Errorf("unpack %s: %w", f.Name, err)
	}
	return out.Close()
}

// archiveRoot is dir, or its only entry when that is a folder and dir holds no manifest.
func archiveRoot(dir string) string {
	if isFile(filepath.Join(dir, ManifestPath)) {
		return dir
	}
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) == 1 && entries[0].IsDir() {
		return filepath.Join(dir, entries[0].Name())
	}
	return dir
}
