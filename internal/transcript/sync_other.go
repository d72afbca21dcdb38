//go:build !linux

package transcript

// Sync falls back to fsync where fdatasync is not available.
func (f osFile) Sync() error { return f.File.Sync() }
