//go:build !linux

package daemon

import "syscall"

// childAttr: without Pdeathsig, keel-nats still stops when the supervisor dies, as the
// kernel closes its stdin then.
func childAttr() *syscall.SysProcAttr { return nil }
