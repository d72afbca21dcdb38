//go:build !linux

package team

// procStart is unknown here: a member's process is judged by its pid alone.
func procStart(int) uint64 { return 0 }
