package procgroup

import (
	"bytes"
	"os"
	"strconv"
)

// onlyZombies reports whether every process of group pgid listed in /proc is a zombie. It
// reads every process's stat line, which is why [Gone] asks only when the group still answers.
func onlyZombies(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false // cannot tell
	}
	want := []byte(strconv.Itoa(pgid))
	for _, e := range entries {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // exited and reaped since the listing
		}
		state, pgrp, ok := parseStat(stat)
		if ok && bytes.Equal(pgrp, want) && state != 'Z' && state != 'X' {
			return false
		}
	}
	return true
}

// zombie reports whether process pid has exited and waits to be reaped.
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	state, _, ok := parseStat(stat)
	return ok && (state == 'Z' || state == 'X')
}

// parseStat returns the state and process group fields of a /proc/PID/stat line: "pid (comm)
// state ppid pgrp …", where comm may itself hold spaces and parentheses.
func parseStat(stat []byte) (state byte, pgrp []byte, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, nil, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, nil, false
	}
	return f[0][0], f[2], true
}
