package dashboard

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// openSet holds the inodes with a lock (the kernel's /proc/locks): a keel process that has a
// transcript open holds its lock. Reading the table takes no lock, so the dashboard never
// keeps a session from opening.
type openSet map[uint64]bool

func openTranscripts() openSet {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	set := openSet{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a "->" marks a waiter).
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if parts := strings.Split(fld, ":"); len(parts) == 3 && i > 0 {
				if ino, err := strconv.ParseUint(parts[2], 10, 64); err == nil {
					set[ino] = true
				}
				break
			}
		}
	}
	return set
}

func (o openSet) state(path string) string {
	if o == nil {
		return "unknown"
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "unknown"
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "unknown"
	}
	if o[st.Ino] {
		return "running"
	}
	return "ended"
}
