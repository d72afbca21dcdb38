package builtin

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// walkFiles calls fn for every regular file below root (or root itself if it is a file) that
// .gitignore files do not exclude, with the directory that holds it, open until fn returns. It skips .git directories and symlinks (as ripgrep does by
// default) and includes hidden files. Directories are read in name order; fn runs on the
// calling goroutine.
//
// root is a resolved path, the one the permission check saw, and the walk follows no link on
// its way or below it: every directory is opened, and every name looked up, in the directory
// above it ([atomicfile.Dir]). A sandboxed command in the background that swaps a directory
// of the tree for a link (rename-exchange, in a loop) would otherwise lead the walk to where
// the link points — a file a deny rule covers, or one outside the working directories — and
// Glob would list it. A d.Info() of what fn gets is looked up the same way, and the file is
// to be opened in dir (openIn).
func walkFiles(ctx context.Context, root string, fn walkFunc) error {
	root = filepath.Clean(root)
	if root == "/" {
		return walkRoot(ctx, root, fn)
	}
	parent, err := atomicfile.OpenDirNoLinks(filepath.Dir(root))
	if err != nil {
		return err
	}
	defer parent.Close()
	info, err := parent.Lstat(filepath.Base(root))
	if err != nil {
		return err
	}
	switch {
	case info.Mode().IsRegular():
		fn(root, parent, fs.FileInfoToDirEntry(info))
		return nil
	case !info.IsDir():
		return nil // a link swapped in for the root since it was resolved, or no file at all
	}
	dir, err := parent.OpenDir(filepath.Base(root))
	if err != nil {
		return nil
	}
	defer dir.Close()
	return walkDir(ctx, dir, root, parentIgnores(root).with(dir, root), fn)
}

// walkFunc is what walkFiles calls for a file: its path, the directory holding it and its
// entry there.
type walkFunc func(path string, dir *atomicfile.Dir, d fs.DirEntry)

// walkRoot walks the file system's root.
func walkRoot(ctx context.Context, root string, fn walkFunc) error {
	dir, err := atomicfile.OpenDirNoLinks(root)
	if err != nil {
		return err
	}
	defer dir.Close()
	return walkDir(ctx, dir, root, parentIgnores(root).with(dir, root), fn)
}

// walkDir walks the held directory dir, whose path is p.
func walkDir(ctx context.Context, dir *atomicfile.Dir, p string, ign ignoreStack, fn walkFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := dir.ReadDir() // sorted by name
	if err != nil {
		return nil // unreadable directories are skipped, like ripgrep does
	}
	for _, e := range entries {
		ep := filepath.Join(p, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			continue
		case e.IsDir():
			if e.Name() == ".git" || ign.ignored(ep, true) {
				continue
			}
			sub, err := dir.OpenDir(e.Name())
			if err != nil {
				continue // a link swapped in since the listing, or gone: nothing to walk
			}
			err = walkDir(ctx, sub, ep, ign.with(sub, ep), fn)
			sub.Close()
			if err != nil {
				return err
			}
		case e.Type().IsRegular():
			if ign.ignored(ep, false) {
				continue
			}
			fn(ep, dir, e)
		}
	}
	return nil
}

// openIn opens the regular file name in the held directory dir to read it, as openRegular
// does: without following a link there or waiting on a FIFO swapped in.
func openIn(dir *atomicfile.Dir, name string) (*os.File, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return checkRegular(f)
}

// readIgnoreFile returns the .gitignore in the held directory dir, nil when it has none (or
// a link, a FIFO or anything else stands there).
func readIgnoreFile(dir *atomicfile.Dir) []byte {
	f, err := openIn(dir, ".gitignore")
	if err != nil {
		return nil
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	return data
}

// dirCursor opens files below root for a producer that names them by path (ripgrep's list),
// without following a link on the way, as walkFiles does: root is opened from "/" as
// atomicfile.OpenDirNoLinks does, each directory below it in the one above. It holds the
// directories on the way to the last file it opened, as the next one is most often in the
// same directory. Not safe for concurrent use; Close it.
type dirCursor struct {
	root string
	// dirs[0] is root, once opened; dirs[i] the directory names[i-1] in dirs[i-1].
	dirs  []*atomicfile.Dir
	names []string
}

// open opens the regular file at path (root itself, or a path below it) to read it.
func (c *dirCursor) open(path string) (*os.File, error) {
	if path == c.root {
		return openRegular(path)
	}
	const sep = string(filepath.Separator)
	rel, ok := strings.CutPrefix(path, strings.TrimSuffix(c.root, sep)+sep)
	if !ok {
		return nil, fmt.Errorf("%s is not below %s", path, c.root)
	}
	if len(c.dirs) == 0 {
		d, err := atomicfile.OpenDirNoLinks(c.root)
		if err != nil {
			return nil, err
		}
		c.dirs = append(c.dirs, d)
	}
	parts := strings.Split(rel, sep)
	names, base := parts[:len(parts)-1], parts[len(parts)-1]
	keep := 0
	for keep < len(names) && keep < len(c.names) && names[keep] == c.names[keep] {
		keep++
	}
	c.truncate(keep)
	for _, name := range names[keep:] {
		d, err := c.dirs[len(c.dirs)-1].OpenDir(name)
		if err != nil {
			return nil, err
		}
		c.dirs, c.names = append(c.dirs, d), append(c.names, name)
	}
	return openIn(c.dirs[len(c.dirs)-1], base)
}

// truncate closes the directories past the first n below root.
func (c *dirCursor) truncate(n int) {
	for len(c.names) > n {
		c.dirs[len(c.dirs)-1].Close()
		c.dirs, c.names = c.dirs[:len(c.dirs)-1], c.names[:len(c.names)-1]
	}
}

// Close closes the directories it holds.
func (c *dirCursor) Close() {
	c.truncate(0)
	for _, d := range c.dirs {
		d.Close()
	}
	c.dirs = nil
}
