package team

import (
	"bytes"
	"os"
	"strconv"
)

// procStart returns when process pid started, in clock ticks since boot (/proc/PID/stat,
// field 22), or 0 when it cannot be read. A pid and its start time name one process: a pid
// the system gave to another process since has another start time.
func procStart(pid int) uint64 {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: count from its end.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	fields := bytes.Fields(stat[i+1:])
	const startField = 22 - 3 // fields after the name start at field 3
	if len(fields) <= startField {
		return 0
	}
	n, err := strconv.ParseUint(string(fields[startField]), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
