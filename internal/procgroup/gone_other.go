//go:build !unix

package procgroup

// Gone reports true: without process groups there is no group to wait for; the caller waits
// for its own child.
func Gone(int) bool { return true }

// exists reports false: without signal 0 there is no asking; the caller waits for its own child.
func exists(int) bool { return false }
