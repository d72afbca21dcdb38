//go:build unix && !linux

package atomicfile

import "golang.org/x/sys/unix"

// walkFlag opens the directories on the way; without O_PATH that takes read permission.
const walkFlag = unix.O_RDONLY
