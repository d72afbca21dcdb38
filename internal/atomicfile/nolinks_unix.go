//go:build unix

package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteNoLinks is WriteFile for a path a program keel does not control could have changed
// since keel last looked: every directory from the root down to the file's is opened without
// following a symbolic link, relative to the one above it and held open while the file is
// written, so a link met on the way is a *LinkError and one swapped in meanwhile leads
// nowhere. Missing directories are made (0o755, less the umask). A link at the file's own
// name is replaced, never followed.
func WriteNoLinks(path string, data []byte, perm os.FileMode) error {
	dir, name, err := openParent("/", path, true)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer unix.Close(dir)
	return writeAt(dir, name, path, data, 0o600, func(f *os.File) error {
		if err := f.Chmod(perm); err != nil {
			return fmt.Errorf("chmod %s: %w", f.Name(), err)
		}
		return nil
	})
}

// ReplaceNoLinks is Replace with WriteNoLinks's walk, for a path with no link on the way (one
// resolved already): a link met there is a *LinkError and nothing is written. The directory
// must exist.
func ReplaceNoLinks(path string, data []byte, old fs.FileInfo) error {
	if HardLinks(old) > 1 {
		return fmt.Errorf("replace %s: it has other hard links: %w", path, ErrNotReplaceable)
	}
	dir, name, err := openParent("/", path, false)
	if err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	defer unix.Close(dir)
	return writeAt(dir, name, path, data, 0o600, replacing(path, old))
}

// CreateNoLinks is Create with WriteNoLinks's walk; the directory must exist.
func CreateNoLinks(path string, data []byte, perm os.FileMode) error {
	dir, name, err := openParent("/", path, false)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer unix.Close(dir)
	return writeAt(dir, name, path, data, perm, nil)
}

// MkdirAllNoLinks is os.MkdirAll (0o755, less the umask) with WriteNoLinks's walk: a link on
// the way is a *LinkError, and nothing is made where it leads.
func MkdirAllNoLinks(path string) error {
	dir, _, err := openParent("/", filepath.Join(path, "_"), true) // makes path's directories, not "_"
	if err != nil {
		return fmt.Errorf("make %s: %w", path, err)
	}
	unix.Close(dir)
	return nil
}

// OpenNoLinks is os.OpenFile with WriteNoLinks's walk, the file itself opened without
// following a link either: for a path with no link on the way (one resolved already), which a
// program keel does not control could change meanwhile — a link swapped in for a directory
// or the file is a *LinkError, never followed.
func OpenNoLinks(path string, flag int, perm os.FileMode) (*os.File, error) {
	dir, name, err := openParent("/", path, false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, describe(dir, name, path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// writeAt is write in the held directory dir: data into a temp file created with perm (less
// the umask), set up by prepare when not nil, then renamed over name.
func writeAt(dir int, name, path string, data []byte, perm os.FileMode, prepare func(*os.File) error) (err error) {
	tmp, f, err := createTempAt(dir, "."+name+".tmp", filepath.Dir(path), perm)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			err = fmt.Errorf("%w: %w", err, ErrNotReplaceable)
		}
		return fmt.Errorf("create temp file for %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			unix.Unlinkat(dir, tmp, 0)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if prepare != nil {
		if err = prepare(f); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", f.Name(), err)
	}
	if err = unix.Renameat(dir, tmp, dir, name); err != nil {
		return fmt.Errorf("rename %s to %s: %w", f.Name(), path, err)
	}
	syncDir(dir)
	return nil
}

// RemoveNoLinks is os.Remove with WriteNoLinks's walk: a link on the way to path is a
// *LinkError and nothing is removed; a link at path itself is removed, not what it names.
func RemoveNoLinks(path string) error { return RemoveBeneath("/", path) }

// RemoveBeneath is RemoveNoLinks for rel below the directory root: root is opened as any path
// is, its links followed (it is the directory the caller chose), the way below it never.
func RemoveBeneath(root, rel string) error {
	dir, name, err := openParent(root, rel, false)
	if err != nil {
		return fmt.Errorf("remove %s: %w", filepath.Join(root, rel), err)
	}
	defer unix.Close(dir)
	err = unix.Unlinkat(dir, name, 0)
	if err == nil {
		return nil
	}
	// A directory: unlink says EISDIR on Linux, EPERM elsewhere; rmdir it, as os.Remove does.
	rerr := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
	if rerr == nil {
		return nil
	}
	if !errors.Is(rerr, unix.ENOTDIR) {
		err = rerr
	}
	return &fs.PathError{Op: "remove", Path: filepath.Join(root, rel), Err: err}
}

// ChmodBeneath sets the permission bits of the regular file rel below root, walked as in
// RemoveBeneath: a link on the way is a *LinkError, and anything but a regular file at rel (a
// link there included) is left alone, an error wrapping ErrNotRegular. The file itself is
// checked and changed by name in its held directory, so only a program swapping a link in
// for it in between could redirect the change.
func ChmodBeneath(root, rel string, mode fs.FileMode) error {
	dir, name, err := openParent(root, rel, false)
	if err != nil {
		return fmt.Errorf("chmod %s: %w", filepath.Join(root, rel), err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "chmod", Path: filepath.Join(root, rel), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("chmod %s: %w", filepath.Join(root, rel), ErrNotRegular)
	}
	if err := unix.Fchmodat(dir, name, uint32(mode.Perm()), 0); err != nil {
		return &fs.PathError{Op: "chmod", Path: filepath.Join(root, rel), Err: err}
	}
	return nil
}

// openParent opens the directory holding rel below root — root opened as given, then each
// directory relative to the one above it without following a link — and returns it with the
// file's name. An absolute rel is taken below root all the same. With create, a missing
// directory is made and then opened the same way.
func openParent(root, rel string, create bool) (int, string, error) {
	if root == "/" && !filepath.IsAbs(rel) {
		abs, err := filepath.Abs(rel)
		if err != nil {
			return -1, "", err
		}
		rel = abs
	}
	rel = filepath.Clean("/" + rel)[1:]
	parent, name := filepath.Split(rel)
	if name == "" {
		return -1, "", fmt.Errorf("%s names no file below %s", rel, root)
	}
	fd, err := unix.Open(root, walkFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", &fs.PathError{Op: "open", Path: root, Err: err}
	}
	at := root
	for c := range strings.SplitSeq(strings.Trim(parent, "/"), "/") {
		if c == "" {
			continue
		}
		next, err := openDirAt(fd, c, create)
		if err != nil {
			err = describe(fd, c, filepath.Join(at, c), err)
			unix.Close(fd)
			return -1, "", err
		}
		unix.Close(fd)
		fd, at = next, filepath.Join(at, c)
	}
	return fd, name, nil
}

func openDirAt(dir int, name string, create bool) (int, error) {
	const flags = walkFlag | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dir, name, flags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err = unix.Mkdirat(dir, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = unix.Openat(dir, name, flags, 0)
		}
	}
	return fd, err
}

// syncDir makes the rename durable, best effort as in write: the held directory may be open
// for the *at calls alone, so it is opened again to be synced.
func syncDir(dir int) {
	if fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Fsync(fd)
		unix.Close(fd)
	}
}

// describe turns the failure to open name in dir into a *LinkError when name is a link (the
// systems differ in what O_NOFOLLOW|O_DIRECTORY says of one: ELOOP, ENOTDIR).
func describe(dir int, name, path string, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &LinkError{Link: path}
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// createTempAt is createTemp in the held directory dir (whose path is dirPath).
func createTempAt(dir int, prefix, dirPath string, perm os.FileMode) (string, *os.File, error) {
	for range 100 {
		name := prefix + strconv.FormatUint(rand.Uint64(), 36)
		fd, err := unix.Openat(dir, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", nil, &fs.PathError{Op: "create", Path: filepath.Join(dirPath, name), Err: err}
		}
		return name, os.NewFile(uintptr(fd), filepath.Join(dirPath, name)), nil
	}
	return "", nil, fmt.Errorf("no free temp file name %s* in %s", prefix, dirPath)
}
