//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the architecture seccomp reports for this build's system calls; x32Bit marks
// the x32 ABI's calls, which share it.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)
