//go:build linux && !amd64 && !arm64

package sandbox

// Without a filter for this architecture the sandbox does not start (loadSeccomp fails).
const (
	auditArch = 0
	x32Bit    = 0
)
