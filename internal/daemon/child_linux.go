package daemon

import "syscall"

// childAttr makes the kernel stop a child the supervisor keeps (keel-nats) when the
// supervisor dies, however it dies: SIGTERM lets it flush its store first.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
