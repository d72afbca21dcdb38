package sandbox

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCachePolicy: the caches among the writable paths are known as such, with keel's
// directory for their overlays; a working directory that is also a cache is written for real;
// keel's directory may be inside the home directory as the workspace (it is read-only there)
// but not inside a cache.
func TestCachePolicy(t *testing.T) {
	home := resolvePath(t.TempDir())
	cache, ws := filepath.Join(home, ".cache"), filepath.Join(home, "ws")
	p := NewPolicy(Input{Mode: ModeWorkspaceWrite, Dirs: []string{home, ws}, Home: home, KeelHome: filepath.Join(home, ".keel"),
		Caches: []string{cache, ws}})
	if len(p.Caches) != 1 || p.Caches[0] != cache {
		t.Errorf("caches: %v, want only %s (the working directory %s is written for real)", p.Caches, cache, ws)
	}
	if want := filepath.Join(home, ".keel", "sandbox", "caches"); p.CacheState != want {
		t.Errorf("keel's directory for the overlays: %q, want %q", p.CacheState, want)
	}
	if why := p.cacheStateOverlap(); why != "" {
		t.Errorf("keel's directory inside the home directory as the workspace is refused: %s", why)
	}
	p = NewPolicy(Input{Mode: ModeWorkspaceWrite, Dirs: []string{ws}, Home: home, KeelHome: filepath.Join(cache, "keel"), Caches: []string{cache}})
	if why := p.cacheStateOverlap(); !strings.Contains(why, "inside the cache "+cache) {
		t.Errorf("keel's directory inside a cache is not refused: %q", why)
	}
	p = NewPolicy(Input{Mode: ModeReadOnly, Dirs: []string{ws}, KeelHome: filepath.Join(home, ".keel"), Caches: []string{cache}})
	if len(p.Caches) != 0 || p.CacheState != "" {
		t.Errorf("read-only mode has caches: %v in %q", p.Caches, p.CacheState)
	}
}
