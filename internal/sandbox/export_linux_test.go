package sandbox

import (
	"context"
	"testing"
)

// VisibleDir is a directory outside every writable root that the sandbox shows, read-only.
var VisibleDir = visibleTestDir

// ForceLauncher makes the sandboxes probed during t use one launcher, "bwrap" or "helper",
// and nothing else: the escape suite runs through each.
func ForceLauncher(t testing.TB, name string) {
	l, ok := map[string]launcher{"bwrap": launcherBwrap, "helper": launcherHelper}[name]
	if !ok {
		t.Fatalf("no launcher %q", name)
	}
	testLauncher.Store(int32(l))
	t.Cleanup(func() { testLauncher.Store(int32(launcherAuto)) })
}

// Launcher names what s, once available, runs its commands with: "bwrap", "helper" or
// "landlock-only".
func Launcher(s *Sandbox) string {
	switch {
	case s.landlockOnly:
		return "landlock-only"
	case s.bwrap != "":
		return "bwrap"
	}
	return "helper"
}

// FindBwrap reports the bubblewrap keel would try, or why there is none it can use.
func FindBwrap() (path, version string, err error) { return findBwrap(context.Background()) }

// CacheDir is the directory below keel's directory for the caches' overlays (KeelHome's
// sandbox/caches) that holds the upper layer of the cache at path.
func CacheDir(keelHome, path string) string { return cacheDir(cacheStateDir(keelHome), path) }

// SetMaxFilterPackBytes lowers, for t, the size of the packs keel copies without the blobs of
// masked files.
func SetMaxFilterPackBytes(t testing.TB, n int64) {
	old := maxFilterPackBytes
	maxFilterPackBytes = n
	t.Cleanup(func() { maxFilterPackBytes = old })
}

// NoUserNamespaces makes the sandboxes probed during t find user namespaces blocked: they
// take the Landlock-only form where Landlock works.
func NoUserNamespaces(t testing.TB) {
	testNoUserNamespaces.Store(true)
	t.Cleanup(func() { testNoUserNamespaces.Store(false) })
}
