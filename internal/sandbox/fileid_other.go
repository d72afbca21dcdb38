//go:build !linux && !darwin

package sandbox

import "io/fs"

// fileIdentity says nothing here, where no sandbox runs.
func fileIdentity(fs.FileInfo) string { return "" }

// fileInode says nothing here, where no sandbox runs.
func fileInode(fs.FileInfo) string { return "" }

// fileStamp says nothing here, where no sandbox runs.
func fileStamp(fs.FileInfo) stamp { return stamp{} }
