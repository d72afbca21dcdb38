package builtin

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
)

// walkFiles calls fn for every regular file below root (or root itself if it is a file) that
// .gitignore files do not exclude. It skips .git directories and symlinks (as ripgrep does by
// default) and includes hidden files. Directories are read in name order; fn runs on the
// calling goroutine.
func walkFiles(ctx context.Context, root string, fn func(path string, d fs.DirEntry)) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		if info.Mode().IsRegular() {
			fn(root, fs.FileInfoToDirEntry(info))
		} else if info.Mode()&fs.ModeSymlink != 0 {
			// A path the model named explicitly is followed, links met while walking are not.
			if fi, err := os.Stat(root); err == nil && fi.Mode().IsRegular() {
				fn(root, fs.FileInfoToDirEntry(fi))
			} else if err == nil && fi.IsDir() {
				return walkDir(ctx, root, parentIgnores(root).with(root), fn)
			}
		}
		return nil
	}
	return walkDir(ctx, root, parentIgnores(root).with(root), fn)
}

func walkDir(ctx context.Context, dir string, ign ignoreStack, fn func(string, fs.DirEntry)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil // unreadable directories are skipped, like ripgrep does
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			continue
		case e.IsDir():
			if e.Name() == ".git" || ign.ignored(p, true) {
				continue
			}
			if err := walkDir(ctx, p, ign.with(p), fn); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if ign.ignored(p, false) {
				continue
			}
			fn(p, e)
		}
	}
	return nil
}
