package sandbox

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox: they would reach past the namespaces
// (io_uring's own file and network paths, other processes' memory, kernel keyrings, BPF,
// performance counters, userfaultfd races) or undo them (mounts, namespace changes,
// pivot_root and chroot), or load code into the kernel.
var deniedSyscalls = []uint32{
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SYSLOG, unix.SYS_QUOTACTL,
	unix.SYS_LOOKUP_DCOOKIE, unix.SYS_OPEN_BY_HANDLE_AT,
}

// sockTypeMask is SOCK_TYPE_MASK: a socket type without its flags.
const sockTypeMask = 0xf

// newNamespaces are the clone flags that make a namespace.
const newNamespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWPID |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// seccompProgram is the filter the command runs under, assembled here rather than by a
// library so that nothing is built at keel's start: a system call of another architecture
// (and, on amd64, of the x32 ABI) fails; deniedSyscalls fail with EPERM, clone with a new
// namespace too; clone3 fails with ENOSYS (its flags sit in memory a filter cannot read, and
// libc then falls back to clone); ioctl fails for TIOCSTI, TIOCLINUX, TIOCSCTTY and (but at
// the user's own terminal) TIOCSPGRP; socket fails for AF_VSOCK, and for AF_UNIX unless Unix
// sockets are allowed, and so does socketpair for an AF_UNIX pair of any type but
// SOCK_STREAM. Everything else is allowed.
func seccompProgram(pl plan) ([]bpf.RawInstruction, error) {
	const (
		retAllow = unix.SECCOMP_RET_ALLOW
		retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		offNR    = 0
		offArch  = 4
		offArg0  = 16 // the low 32 bits of args[0], little-endian
		offArg1  = 24
	)
	families := []uint32{unix.AF_VSOCK}
	if len(pl.Sockets) == 0 {
		families = append(families, unix.AF_UNIX)
	}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: offNR, Size: 4},
	}
	if x32Bit != 0 {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: x32Bit, SkipTrue: 1}, bpf.RetConstant{Val: retEPERM})
	}
	for _, nr := range deniedSyscalls {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1}, bpf.RetConstant{Val: retEPERM})
	}
	p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE3, SkipTrue: 1}, bpf.RetConstant{Val: retNOSYS})
	// clone: its flags are args[0] on amd64 and arm64.
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE, SkipTrue: 4},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: newNamespaces, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	)
	// ioctl: no TIOCSTI (typing into the terminal keel runs in, whose input the shell there
	// reads once keel exits), no TIOCLINUX (the same on a virtual console), and no TIOCSCTTY
	// or TIOCSPGRP: the command runs in a session of its own, without a controlling terminal
	// (Confine), and must not take one, nor the foreground of one it was handed, where it would
	// read what the user types to keel. A command the user runs at their own terminal
	// (pl.Terminal: `keel sandbox -- bash`) keeps TIOCSPGRP for its shell's job control. The
	// request is an unsigned int; the kernel ignores the upper half of the register.
	ioctls := []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSCTTY}
	if !pl.Terminal {
		ioctls = append(ioctls, unix.TIOCSPGRP)
	}
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_IOCTL, SkipTrue: uint8(len(ioctls) + 3)},
		bpf.LoadAbsolute{Off: offArg1, Size: 4})
	for i, req := range ioctls {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: req, SkipTrue: uint8(len(ioctls) - i)})
	}
	p = append(p, bpf.RetConstant{Val: retAllow}, bpf.RetConstant{Val: retEPERM})
	if len(pl.Sockets) == 0 {
		// socketpair: an AF_UNIX pair of datagrams (SOCK_RAW is one too for AF_UNIX) or of
		// sequenced packets is no new socket as socket() makes, but a datagram socket may be
		// connected again, to any path-named datagram socket the mount namespace shows
		// (journald, a daemon's control socket), which Landlock holds back only from ABI 9
		// (LANDLOCK_ACCESS_FS_RESOLVE_UNIX). Stream pairs stay: shells and Python's
		// subprocess plumbing use them, and a connected stream socket cannot connect again
		// (EISCONN). The type's flags (SOCK_NONBLOCK, SOCK_CLOEXEC) are masked off.
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_SOCKETPAIR, SkipTrue: 7},
			bpf.LoadAbsolute{Off: offArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.AF_UNIX, SkipTrue: 3},
			bpf.LoadAbsolute{Off: offArg1, Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SOCK_STREAM, SkipTrue: 1},
			bpf.RetConstant{Val: retAllow},
			bpf.RetConstant{Val: retEPERM},
		)
	}
	p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_SOCKET, SkipTrue: uint8(2*len(families) + 2)},
		bpf.LoadAbsolute{Off: offArg0, Size: 4})
	for _, fam := range families {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: fam, SkipTrue: 1}, bpf.RetConstant{Val: retEPERM})
	}
	p = append(p, bpf.RetConstant{Val: retAllow}, bpf.RetConstant{Val: retAllow})
	return bpf.Assemble(p)
}

// loadSeccomp sets no_new_privs and installs the filter on the calling thread, the one that
// becomes the command.
func loadSeccomp(pl plan) error {
	if auditArch == 0 {
		return errors.New("install the sandbox's seccomp filter: keel has no filter for this architecture")
	}
	raw, err := seccompProgram(pl)
	if err != nil {
		return fmt.Errorf("assemble the sandbox's seccomp filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("install the sandbox's seccomp filter: %w", errno)
	}
	return nil
}
