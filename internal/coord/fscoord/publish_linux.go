//go:build linux

package fscoord

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a new file with no name in dir (O_TMPFILE), to be given one by link: a
// message costs no temporary name to create and remove, which is most of a send's cost. ok is
// false where the filesystem cannot (then a named temporary file is used).
func openUnnamed(dir string) (f *os.File, ok bool) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	return os.NewFile(uintptr(fd), dir+"/(unnamed)"), true
}

// linkUnnamed gives the unnamed file f the name dst; it fails with an error wrapping
// os.ErrExist when dst exists. It goes through /proc/self/fd, which needs no privilege
// (AT_EMPTY_PATH would).
func linkUnnamed(f *os.File, dst string) error {
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, dst, unix.AT_SYMLINK_FOLLOW)
	if errors.Is(err, unix.EEXIST) {
		return &os.LinkError{Op: "link", Old: f.Name(), New: dst, Err: os.ErrExist}
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: dst, Err: err}
	}
	return nil
}
