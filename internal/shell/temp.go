package shell

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cwdFilePrefix names the file each foreground command writes its final directory to.
const cwdFilePrefix = "keel-cwd-"

// SweepCwdFiles removes the cwd files left in dir by commands whose keel was killed before it
// could remove them, when they are older than age: a session's own directory is swept with
// age 0 (its lock says no other keel uses it), the shared temporary directory with an age no
// running command reaches. It returns how many it removed.
func SweepCwdFiles(dir string, age time.Duration) int {
	des, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	cutoff := time.Now().Add(-age)
	n := 0
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), cwdFilePrefix) || !de.Type().IsRegular() {
			continue
		}
		if age > 0 {
			info, err := de.Info()
			if err != nil || info.ModTime().After(cutoff) {
				continue
			}
		}
		if err := os.Remove(filepath.Join(dir, de.Name())); err == nil || errors.Is(err, fs.ErrNotExist) {
			n++
		}
	}
	return n
}

// StaleCwdFileAge is the age past which a cwd file in a shared directory cannot belong to a
// running command: foreground commands end within MaxTimeout.
const StaleCwdFileAge = 2 * MaxTimeout

// SetTempDir makes foreground commands run through these jobs' session keep their cwd files
// in dir (the session's own directory) rather than the system's temporary directory.
func (j *Jobs) SetTempDir(dir string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.tempDir = dir
}

// TempDir is the directory for the cwd files of the session's commands; "" is the system's.
func (j *Jobs) TempDir() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tempDir
}
