package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// walkPath resolves the absolute path p as the kernel does when a program opens it: component
// by component, a symbolic link followed where it stands (so a ".." after it leaves its
// target). It returns the path reached, whether the way passed through a directory whose
// entries depend on the process that looks (/proc, /dev/fd: /proc/self/cwd is keel's working
// directory when keel looks and git's when git does), and the links it followed. A component
// that does not exist ends the following; the rest is taken as written.
func walkPath(p string) (real string, viaProcess bool, links []string) {
	rest := strings.Split(p, "/")
	cur := "/"
	missing := false
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if processDependent(next) {
			return next, true, links
		}
		if missing {
			cur = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			missing = err != nil
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > maxLinkHops {
			return next, true, links // a loop, or unreadable: as unknowable as /proc
		}
		links = append(links, next)
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, false, links
}

// maxLinkHops is the kernel's own limit on links followed in one path (MAXSYMLINKS).
const maxLinkHops = 40

// processDependent reports whether what p names depends on the process that opens it.
func processDependent(p string) bool {
	for _, d := range []string{"/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// readRegular reads at most max bytes of path, opened only as a regular file ([openRegular]);
// a file holding more is an error.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	return readOpen(f, max)
}

// readOpen reads at most max bytes of f, which it closes, when it is a regular file; a file
// holding more is errTooLarge.
func readOpen(f *os.File, max int64) ([]byte, error) {
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: %w", f.Name(), errNotRegular)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: %w", f.Name(), errTooLarge)
	}
	return b, err
}

var (
	// errTooLarge says a file holds more than keel reads of it.
	errTooLarge = errors.New("larger than keel reads")
	// errNotRegular says a file keel reads is a link, a FIFO, a directory or a device.
	errNotRegular = errors.New("not a regular file")
)
