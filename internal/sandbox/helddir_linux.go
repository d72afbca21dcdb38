package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// heldDir is a directory disarm changes, held open: keel changes it outside the sandbox while
// a command may still run (in the background), and a link that command swaps into its path
// meanwhile must lead nowhere. Every name given to its methods is one component.
type heldDir struct {
	fd   int
	path string
}

// holdDir opens the directory path, refusing it when any component of path is a symbolic link
// (disarm's paths are resolved, so one there was swapped in).
func holdDir(path string) (*heldDir, error) {
	fd, err := openNoLinks(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &heldDir{fd: fd, path: path}, nil
}

func (d *heldDir) close() { unix.Close(d.fd) }

// exists reports whether name is there, a link not followed.
func (d *heldDir) exists(name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// moveTo renames name in d to newName in dst; a link at newName is replaced, never followed.
func (d *heldDir) moveTo(name string, dst *heldDir, newName string) error {
	if err := unix.Renameat(d.fd, name, dst.fd, newName); err != nil {
		return fmt.Errorf("move %s to %s: %w", filepath.Join(d.path, name), filepath.Join(dst.path, newName), err)
	}
	return nil
}

// symlink makes name in d a link to target.
func (d *heldDir) symlink(target, name string) error {
	if err := unix.Symlinkat(target, d.fd, name); err != nil {
		return fmt.Errorf("link %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// mkdir makes the directory name in d and holds it: what is held is what was made, whatever
// is renamed to its name afterwards.
func (d *heldDir) mkdir(name string) (*heldDir, error) {
	if err := unix.Mkdirat(d.fd, name, 0o700); err != nil {
		return nil, fmt.Errorf("make %s: %w", filepath.Join(d.path, name), err)
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filepath.Join(d.path, name), err)
	}
	return &heldDir{fd: fd, path: filepath.Join(d.path, name)}, nil
}

// writeFile puts data at name in d whole: written to a new file beside it, then renamed over
// it, so no reader sees it half written.
func (d *heldDir) writeFile(name string, data []byte) error {
	tmp := freeHeldName(d, "."+name+".keel-tmp")
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(d.path, name), err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("write %s: %w", filepath.Join(d.path, name), err)
	}
	return nil
}

// openRegular opens path, a file a command may have put there, for reading, only when it is a
// regular file: its links resolved first, then opened with none in the path and without
// blocking, and checked on the open file — so neither a FIFO (a read would wait for ever) nor
// a device a link names (opening some has effects) is ever opened as it, whatever is swapped
// in meanwhile.
func openRegular(path string) (*os.File, error) {
	f, err := atomicfile.OpenResolved(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}

// openNoLinks opens path with flags, refusing it when any component is a symbolic link; before
// Linux 5.6, without openat2, only the last component is held to that.
func openNoLinks(path string, flags int) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = unix.Open(path, flags|unix.O_NOFOLLOW, 0)
	}
	return fd, err
}

// readRegular reads at most max bytes of name in d, only when it is a regular file: checked
// before it is opened, opened without following a link and without blocking, and checked
// again on the open file — a FIFO or a link swapped in meanwhile is never read through.
// errNotRegular when it is none; a file holding more than max is errTooLarge.
func (d *heldDir) readRegular(name string, max int64) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(d.path, name), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(d.path, name), errNotRegular)
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		err = errNotRegular
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(d.path, name), err)
	}
	return readOpen(os.NewFile(uintptr(fd), filepath.Join(d.path, name)), max)
}
