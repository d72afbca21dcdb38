package sandbox

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox: they would reach past the namespaces
// (io_uring's own file and network paths, other processes' memory, kernel keyrings, BPF,
// performance counters, userfaultfd races) or undo them (mounts, namespace changes,
// pivot_root and chroot), or load code into the kernel.
var deniedSyscalls = []string{
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
	"fspick", "mount_setattr", "unshare", "setns",
	"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"acct", "swapon", "swapoff", "reboot", "syslog", "quotactl", "lookup_dcookie", "open_by_handle_at",
}

// seccompPolicy is the filter the command runs under: deniedSyscalls, clone with a new
// namespace, clone3 (its flags sit in memory a filter cannot read, so it fails with ENOSYS
// and libc falls back to clone), AF_VSOCK sockets, and Unix sockets unless some are allowed.
func seccompPolicy(pl plan) seccomp.Policy {
	var cond []seccomp.NameWithConditions
	for _, flag := range []uint64{unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWNET, unix.CLONE_NEWPID,
		unix.CLONE_NEWIPC, unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME} {
		cond = append(cond, seccomp.NameWithConditions{Name: "clone",
			Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: flag}}})
	}
	families := []uint64{unix.AF_VSOCK}
	if len(pl.Sockets) == 0 {
		families = append(families, unix.AF_UNIX)
	}
	for _, fam := range families {
		cond = append(cond, seccomp.NameWithConditions{Name: "socket",
			Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.Equal, Value: fam}}})
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deniedSyscalls},
			{Action: seccomp.ActionErrno, NamesWithCondtions: cond},
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
}

// loadSeccomp sets no_new_privs and installs the filter on the calling thread, the one that
// becomes the command.
func loadSeccomp(pl plan) error {
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: seccompPolicy(pl)}); err != nil {
		return fmt.Errorf("install the sandbox's seccomp filter: %w", err)
	}
	return nil
}
