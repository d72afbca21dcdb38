package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// devNodes are the device files the sandbox's own /dev holds, bound from the real ones.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// setupMounts builds the sandbox's view of the file system in the helper's new mount
// namespace: every mount read-only, the writable roots bound read-write over it, the
// always-read-only paths bound read-only again inside them, the masked paths covered, and a
// private /tmp, /dev and /proc. The sources are opened before anything is covered, so a
// writable root under /tmp is bound from the real one into the private /tmp.
func setupMounts(pl plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the sandbox's mounts private: %w", err)
	}
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	writable, err := openAll(pl.Writable)
	if err != nil {
		return err
	}
	layers, err := openOverlays(pl.Overlays)
	if err != nil {
		return err
	}
	unmasked, err := openAll(pl.Unmasked)
	if err != nil {
		return err
	}
	visible, err := openAll(pl.Visible)
	if err != nil {
		return err
	}
	objects, err := openAll(objectSources(pl.Objects))
	if err != nil {
		return err
	}
	devs, err := openAll(prefixed("/dev/", devNodes))
	if err != nil {
		return err
	}
	tmpWritable := slices.Contains(pl.Writable, "/tmp")
	if !tmpWritable {
		if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount the sandbox's /tmp: %w", err)
		}
	}
	for i, w := range pl.Writable {
		if j := pl.overlayIndex(w); j >= 0 {
			if err := mountCache(pl.Overlays[j], writable[i], layers[j], false); err != nil {
				return err
			}
			continue
		}
		if err := bindFD(writable[i], w, unix.MS_REC); err != nil {
			return fmt.Errorf("make %s writable: %w", w, err)
		}
	}
	for i, v := range pl.Visible {
		if err := bindFD(visible[i], v, unix.MS_REC); err != nil {
			return fmt.Errorf("keep %s on PATH: %w", v, err)
		}
		if err := remountReadOnly(v); err != nil {
			return err
		}
	}
	for _, m := range mounts {
		switch {
		case within(m, "/proc"), within(m, "/dev"), !tmpWritable && within(m, "/tmp"), slices.Contains(pl.Writable, m):
			continue
		}
		if err := remountReadOnly(m); err != nil {
			return err
		}
	}
	if err := protect(pl); err != nil {
		return err
	}
	if err := hideObjects(pl, objects); err != nil {
		return err
	}
	if err := mask(pl.Masked, pl.Unmasked, unmasked); err != nil {
		return err
	}
	if err := setupDev(devs); err != nil {
		return err
	}
	return setupProc()
}

// protect pins pl's pinned directories and binds its always-read-only paths read-only.
func protect(pl plan) error {
	for _, g := range pl.Pinned {
		if err := unix.Mount(g, g, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("pin %s: %w", g, err)
		}
	}
	for _, r := range pl.ReadOnly {
		if err := unix.Mount(r, r, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("protect %s: %w", r, err)
		}
		if err := remountReadOnly(r); err != nil {
			return err
		}
	}
	return nil
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// openAll opens each path as an O_PATH descriptor: a handle on the real file that survives
// the path being covered.
func openAll(paths []string) ([]int, error) {
	fds := make([]int, len(paths))
	for i, p := range paths {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s for the sandbox: %w", p, err)
		}
		fds[i] = fd
	}
	return fds, nil
}

// bindFD binds the file fd refers to onto target, creating the mount point when target is
// missing (inside the private /tmp, or a masked directory's empty tmpfs).
func bindFD(fd int, target string, flags uintptr) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = os.Mkdir(target, 0o755)
		} else {
			err = os.WriteFile(target, nil, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), target, "", unix.MS_BIND|flags, "")
}

// mountPoints lists the mount points of the namespace, from /proc/self/mountinfo.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("list mounts: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if p := unescapeMount(fields[4]); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// remountReadOnly makes the mount at path read-only, keeping its other flags: a mount
// inherited from the parent namespace has them locked, and a remount that dropped nosuid or
// nodev would be refused. A mount point the sandbox cannot reach (gone, or not searchable by
// the user) is skipped: the command cannot reach it either.
func remountReadOnly(path string) error { return remount(path, true) }

// remount makes the mount at path read-only or writable, keeping its other flags
// ([remountReadOnly]).
func remount(path string, readOnly bool) error {
	what := "writable"
	if readOnly {
		what = "read-only"
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("make %s %s: %w", path, what, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT)
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	for st, ms := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_SYNCHRONOUS: unix.MS_SYNCHRONOUS, unix.ST_NOATIME: unix.MS_NOATIME,
		unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if sfs.Flags&st != 0 {
			flags |= ms
		}
	}
	if err := unix.Mount("", path, "", flags, ""); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) {
			return nil
		}
		return fmt.Errorf("make %s %s: %w", path, what, err)
	}
	return nil
}

// mask covers each masked path with an empty read-only directory (a tmpfs) or an empty
// read-only file, then binds the allowRead exceptions back inside, from the descriptors
// opened before the cover.
func mask(masked, unmasked []string, unmaskedFDs []int) error {
	empty := "/tmp/.keel-sandbox-empty"
	if len(masked) > 0 {
		if err := os.WriteFile(empty, nil, 0o444); err != nil {
			return fmt.Errorf("mask: %w", err)
		}
		defer os.Remove(empty)
	}
	var dirs []string
	for _, m := range masked {
		fi, err := os.Lstat(m)
		if err != nil {
			continue // under a masked directory already
		}
		if fi.IsDir() {
			if err := unix.Mount("tmpfs", m, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
				return fmt.Errorf("mask %s: %w", m, err)
			}
			dirs = append(dirs, m)
			continue
		}
		if err := unix.Mount(empty, m, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mask %s: %w", m, err)
		}
		if err := remountReadOnly(m); err != nil {
			return err
		}
	}
	for i, u := range unmasked {
		if err := bindFD(unmaskedFDs[i], u, unix.MS_REC); err != nil {
			return fmt.Errorf("keep %s readable: %w", u, err)
		}
		if err := remountReadOnly(u); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if err := remountReadOnly(d); err != nil {
			return err
		}
	}
	return nil
}

// objectSources are the copies of packs pl binds.
func objectSources(binds []objBind) []string {
	out := make([]string, len(binds))
	for i, b := range binds {
		out[i] = b.Src
	}
	return out
}

// hideObjects binds the copies of packs without masked files' blobs read-only over the
// originals, from the descriptors srcs opened before anything was covered, and covers
// pl.Unreadable with an empty file no one can open (mode 0, read-only: its owner cannot
// change that, and the command has no capability that would pass it).
func hideObjects(pl plan, srcs []int) error {
	for i, b := range pl.Objects {
		if err := bindFD(srcs[i], b.Dest, 0); err != nil {
			return fmt.Errorf("hide masked files' blobs in %s: %w", b.Dest, err)
		}
		if err := remountReadOnly(b.Dest); err != nil {
			return err
		}
	}
	if len(pl.Unreadable) == 0 {
		return nil
	}
	f, err := os.CreateTemp("/tmp", ".keel-sandbox-unreadable-")
	if err != nil {
		return fmt.Errorf("hide masked files' blobs: %w", err)
	}
	f.Close()
	defer os.Remove(f.Name())
	if err := os.Chmod(f.Name(), 0); err != nil {
		return fmt.Errorf("hide masked files' blobs: %w", err)
	}
	for _, u := range pl.Unreadable {
		if err := unix.Mount(f.Name(), u, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("hide %s: %w", u, err)
		}
		if err := remountReadOnly(u); err != nil {
			return err
		}
	}
	return nil
}

// setupDev gives the sandbox a /dev of its own: a few device files bound from the real ones,
// the standard links, a shared-memory directory and a private pseudo-terminal instance.
func setupDev(devs []int) error {
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return fmt.Errorf("mount the sandbox's /dev: %w", err)
	}
	for i, n := range devNodes {
		if err := bindFD(devs[i], "/dev/"+n, 0); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"} {
		if err := os.Symlink(target, "/dev/"+name); err != nil {
			return fmt.Errorf("link /dev/%s: %w", name, err)
		}
	}
	for _, d := range []string{"/dev/shm", "/dev/pts"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("make %s: %w", d, err)
		}
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	// A terminal is optional: without devpts, commands that want one fail as without a tty.
	_ = unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
	return nil
}

// setupProc mounts a /proc of the sandbox's PID namespace: the command sees its own
// processes only. Where the kernel refuses (a /proc partly covered by a container runtime),
// the real one stays, read-only; ptrace and process_vm_* are refused by seccomp either way.
func setupProc() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return remountReadOnly("/proc")
	}
	return nil
}
