package sandbox

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock access rights by the ABI that introduced them.
const (
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llV1   = llRead | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	llV2 = llV1 | unix.LANDLOCK_ACCESS_FS_REFER
	llV3 = llV2 | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	llV5 = llV3 | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llV9 = llV5 | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
)

// LandlockABI is the kernel's Landlock ABI version; 0 without Landlock.
func LandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// applyLandlock adds Landlock's rules to the mounts on the calling thread (the one that
// becomes the command), where the kernel has Landlock: read and run everywhere, write only
// in the writable roots, the private /tmp and /dev; from ABI 9 on, connecting to a Unix
// socket only where allowUnixSockets says. It is best effort — an older kernel gets the
// rights it knows, one without Landlock nothing — so the mounts, not Landlock, are what the
// sandbox relies on. It is written against the raw system calls because the rules must bind
// this one thread only (go-landlock restricts every thread, through a cgo helper).
func applyLandlock(pl plan) bool {
	handled := handledFS(LandlockABI())
	if handled == 0 {
		return false
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return false
	}
	defer unix.Close(int(fd))
	write := handled &^ (llRead | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX)
	addRule(int(fd), "/", llRead)
	for _, w := range append([]string{"/tmp", "/dev"}, pl.Writable...) {
		addRule(int(fd), w, (llRead|write)&handled)
	}
	for _, s := range pl.Sockets {
		addRule(int(fd), s, (llRead|unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX)&handled)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return false
	}
	_, _, errno = unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0)
	return errno == 0
}

// addRule allows access beneath path (or on it, for a file; directory-only rights are
// dropped for a file, which Landlock would refuse). It reports whether the rule was added.
func addRule(rulesetFD int, path string, access uint64) bool {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	return errno == 0
}

// handledFS is every file-system right the kernel's Landlock ABI knows (0: no Landlock).
func handledFS(abi int) uint64 {
	switch {
	case abi >= 9:
		return llV9
	case abi >= 5:
		return llV5
	case abi >= 3:
		return llV3
	case abi == 2:
		return llV2
	case abi == 1:
		return llV1
	}
	return 0
}
