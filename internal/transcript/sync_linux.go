package transcript

import "syscall"

// Sync uses fdatasync: the file's size changes with every append, which fdatasync covers, and
// its timestamps need not be durable.
func (f osFile) Sync() error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
