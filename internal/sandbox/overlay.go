package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The per-user toolchain caches ([Caches]) are writable inside so that builds work there, but
// what a command writes into them must not reach the builds the user runs outside: a
// rewritten object in GOCACHE, a dependency's source in the module cache, a package in
// ~/.npm/_npx or a crate in ~/.cargo/registry would run the command's code at the user's next
// go build, npx or cargo build. So each cache is an overlay inside the sandbox: the user's
// real cache its lower layer, read-only (builds inside still find it warm), and a directory of
// keel's own its upper layer, which keeps what commands add from one command and one session
// to the next and which nothing outside the sandbox reads. Where an overlay cannot be mounted
// (the Landlock-only form, a kernel or file system that refuses it, no directory of keel's to
// keep it in), as a probe finds once for the session, the cache is bound writable as before,
// and the sandbox's notice and doctor say so. Where one cache's overlay fails for one command
// only — keel cannot make its directories, the kernel refuses the mount, which a command can
// cause itself by filling the disk — the cache is bound read-only for that command, never
// writable, and its output says so.

// overlay is one cache mounted as an overlay: Dest, the cache's path, shows the real cache
// under Upper, keel's directory; Work is overlayfs's scratch directory beside it, one per
// command (two mounts sharing one would clear each other's). Failed, when set, says why keel
// could not make them for this command: the cache is then bound read-only instead.
type overlay struct {
	Dest   string `json:"dest"`
	Upper  string `json:"upper,omitempty"`
	Work   string `json:"work,omitempty"`
	Failed string `json:"failed,omitempty"`
}

// cacheStateDir is where the caches' upper layers live, below keel's own directory (which is
// always read-only inside the sandbox): empty without one.
func cacheStateDir(keelHome string) string {
	if keelHome == "" {
		return ""
	}
	return filepath.Join(keelHome, "sandbox", "caches")
}

// addCaches makes the toolchain caches writable and remembers which of the writable paths
// they are, and where their overlays are kept.
func (p *Policy) addCaches(caches []string, keelHome string, abs func(string) string) {
	for _, c := range caches {
		real := resolvePath(abs(c))
		if slices.Contains(p.Writable, real) {
			continue // a working directory or allowWrite itself, written for real
		}
		p.addWritable(abs(c), "the toolchain caches keel keeps writable")
		if slices.Contains(p.Writable, real) && !slices.Contains(p.Caches, real) {
			p.Caches = append(p.Caches, real)
		}
	}
	if len(p.Caches) > 0 && keelHome != "" {
		p.CacheState = resolvePath(cacheStateDir(abs(keelHome)))
	}
}

// cacheDir is the directory under state that holds the upper layer of the cache at path: its
// base name, for whoever looks, and a hash of the whole path, so that two caches never share
// one.
func cacheDir(state, path string) string {
	sum := sha256.Sum256([]byte(path))
	base := strings.Trim(filepath.Base(path), ".")
	if base == "" || base == "/" {
		base = "root"
	}
	return filepath.Join(state, base+"-"+hex.EncodeToString(sum[:6]))
}

// landingRoots are where a command's writes can land: the writable roots, and the upper
// layers of the caches' overlays, which a command writes through the cache's path and can
// name by their own (a .git file in the workspace naming a repository it made in ~/.npm, a
// cd into keel's directory for the layers). A repository there is disarmed like one in a
// writable root.
func (p Policy) landingRoots() []string {
	if p.CacheState == "" || len(p.Caches) == 0 {
		return p.Writable
	}
	roots := slices.Clone(p.Writable)
	for _, c := range p.Caches {
		roots = append(roots, resolvePath(filepath.Join(cacheDir(p.CacheState, c), "upper")))
	}
	return roots
}

// cacheStateOverlap says why keel's directory for the overlays cannot hold them where it
// is: inside a cache, or holding a writable path, or inside a writable root (the home
// directory as the workspace) without being read-only there, as keel's own directory
// always is.
func (p Policy) cacheStateOverlap() string {
	for _, w := range p.Writable {
		readOnly := withinAny(p.CacheState, p.ReadOnly)
		switch {
		case within(w, p.CacheState):
			return fmt.Sprintf("keel's directory for their overlays (%s) holds the writable %s", p.CacheState, w)
		case !within(p.CacheState, w):
		case slices.Contains(p.Caches, w):
			return fmt.Sprintf("keel's directory for their overlays (%s) is inside the cache %s", p.CacheState, w)
		case !readOnly:
			return fmt.Sprintf("keel's directory for their overlays (%s) is writable inside %s", p.CacheState, w)
		}
	}
	return ""
}

// overlayIndex is the index in pl.Overlays of the overlay mounted at path, or -1.
func (pl plan) overlayIndex(path string) int {
	return slices.IndexFunc(pl.Overlays, func(o overlay) bool { return o.Dest == path })
}

// underOverlay reports whether path is inside one of pl's overlays (or is one).
func (pl plan) underOverlay(path string) bool {
	return slices.ContainsFunc(pl.Overlays, func(o overlay) bool { return within(path, o.Dest) })
}

// cachesNotice says, once the probe has run, that the toolchain caches are bound writable
// rather than overlaid, and what that leaves open; empty when they are overlays.
func (s *Sandbox) cachesNotice() string {
	if s.cachesWhy == "" {
		return ""
	}
	return fmt.Sprintf("the toolchain caches (%s) are writable as they are, not overlays (%s): a command can change what go build, npx or cargo run later outside the sandbox",
		strings.Join(s.policy.Caches, ", "), s.cachesWhy)
}

// cachesFinding is `keel doctor`'s line on the toolchain caches: each an overlay, the real
// cache under keel's upper layer, or bound writable and why.
func cachesFinding(s *Sandbox, p Policy) (Finding, bool) {
	if p.Mode != ModeWorkspaceWrite || len(p.Caches) == 0 {
		return Finding{}, false
	}
	switch {
	case runtime.GOOS != "linux":
		return Finding{Name: "toolchain caches", Status: "warn", Detail: "writable as they are (overlays are Linux only): " + strings.Join(p.Caches, ", ")}, true
	case s.cachesWhy != "":
		return Finding{Name: "toolchain caches", Status: "warn", Detail: s.cachesNotice()}, true
	}
	var each []string
	absent := 0
	for _, c := range p.Caches {
		if _, err := os.Lstat(c); err != nil {
			absent++
			continue
		}
		each = append(each, c+" → "+filepath.Join(cacheDir(p.CacheState, c), "upper"))
	}
	detail := "overlays, the real cache read-only under an upper layer of keel's that only sandboxed commands see: " + strings.Join(each, ", ")
	if absent > 0 {
		detail += fmt.Sprintf("; and %d not present now (not mounted until they exist)", absent)
	}
	return Finding{Name: "toolchain caches", Status: "ok", Detail: detail}, true
}
