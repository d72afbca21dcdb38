//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the architecture seccomp reports for this build's system calls; arm64 has no
// second ABI under it.
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)
