package sandbox

import "testing"

// SetMaxNewPackBytes lowers, during t, the disk space of new packs one release verifies.
func SetMaxNewPackBytes(t testing.TB, n int64) {
	old := maxNewPackBytes
	maxNewPackBytes = n
	t.Cleanup(func() { maxNewPackBytes = old })
}
