package atomicfile

import "golang.org/x/sys/unix"

// walkFlag opens the directories on the way for the *at calls alone: O_PATH needs only search
// permission, so a directory the user may pass through but not list (0711) is no obstacle.
const walkFlag = unix.O_PATH
