package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// OpenRegular opens path for reading as [OpenNoLinks] does — path has its links resolved
// already, so a link met anywhere on the way is one swapped in after the path was checked, a
// *LinkError, never followed — and without waiting: O_NONBLOCK, so a FIFO swapped in for the
// file fails here instead of holding keel in open(2) until something writes to it. Anything
// but a regular file, judged on the opened descriptor, is [ErrNotRegular].
//
// It is how keel reads a file it checked (a permission rule, a sandbox mask) and then puts
// into the prompt or hands to a tool: the check judges exactly what is opened.
func OpenRegular(path string) (*os.File, error) {
	f, err := OpenNoLinks(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s; something may have replaced it): %w", path, fi.Mode().Type(), ErrNotRegular)
	}
	return f, nil
}

// ReadRegular reads at most max bytes (all of it when max < 0) of the file [OpenRegular]
// opens at path.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if max >= 0 {
		r = io.LimitReader(f, max)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// ErrTooLarge is what [ReadWhole] returns, wrapped, for a file past its bound.
var ErrTooLarge = errors.New("file too large")

// ReadWhole reads all of the file [OpenRegular] opens at path, or fails with [ErrTooLarge]
// when it holds more than max bytes — never part of it: for a reader that must have the whole
// file (an edit, a copy kept for rewind). A command can make a sparse file of any size for no
// disk at all, which keel would otherwise read into its memory.
func ReadWhole(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return fmt.Errorf("%s holds %d MiB, more than the %d MiB keel reads whole: %w", path, size>>20, max>>20, ErrTooLarge)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, tooLarge(fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1)) // it may grow while read
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, tooLarge(int64(len(data)))
	}
	return data, nil
}

// ReadResolved is [ReadRegular] of path with its links resolved first, for a file keel reads
// without checking it against any rule (git's .git, HEAD): a stable link is followed, and a
// FIFO or anything but a regular file is an error at once, never waited on.
func ReadResolved(path string, max int64) ([]byte, error) {
	real, err := resolved(path)
	if err != nil {
		return nil, err
	}
	return ReadRegular(real, max)
}

// OpenResolved is [OpenRegular] of path with its links resolved first, as [ReadResolved] reads.
func OpenResolved(path string) (*os.File, error) {
	real, err := resolved(path)
	if err != nil {
		return nil, err
	}
	return OpenRegular(real)
}

// resolved is path absolute, with its links resolved.
func resolved(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}
