package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// overlayCaches makes pl's writable caches overlays ([overlay]) for run r: each cache's upper
// directory made if missing, and a work directory of r's own, removed on release. A cache
// that cannot have them stays bound writable, and the log says why.
func (s *Sandbox) overlayCaches(r *Run, p Policy, pl *plan) {
	if s.cachesWhy != "" || p.CacheState == "" {
		return
	}
	for _, w := range pl.Writable {
		if !slices.Contains(p.Caches, w) {
			continue
		}
		dir := cacheDir(p.CacheState, w)
		upper := filepath.Join(dir, "upper")
		work, err := "", os.MkdirAll(upper, 0o700)
		if err == nil {
			work, err = r.workDir(dir)
		}
		if err != nil {
			slog.Warn("sandbox: a toolchain cache stays writable, not overlaid", "cache", w, "err", err)
			continue
		}
		pl.Overlays = append(pl.Overlays, overlay{Dest: w, Upper: upper, Work: work})
	}
	if len(pl.Overlays) > 0 {
		pl.CacheState = p.CacheState
	}
}

// workDir is the work directory of r's overlay of the cache kept in dir: dir/work, held with
// an exclusive lock for r's life, when no other command (of this keel or another) holds it;
// else one of r's own, removed on release. overlayfs clears a work directory as it mounts
// it, which must not happen under another mount's feet.
func (r *Run) workDir(dir string) (string, error) {
	work := filepath.Join(dir, "work")
	lock, err := os.OpenFile(filepath.Join(dir, "work.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			// Made anew: a volatile overlay leaves a mark in it that refuses the next mount.
			removeWorkDirs([]string{work})
			if err := os.Mkdir(work, 0o700); err == nil {
				r.files = append(r.files, lock) // closed, and so unlocked, on release
				return work, nil
			}
		}
		lock.Close()
	}
	work, err = os.MkdirTemp(dir, "work-")
	if err == nil {
		r.workDirs = append(r.workDirs, work)
	}
	return work, err
}

// removeWorkDirs removes the overlays' work directories of a released run. overlayfs leaves
// its own directory in each without any permission: given back first, so that keel can
// remove what is inside.
func removeWorkDirs(dirs []string) {
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if e != nil && e.IsDir() {
				_ = os.Chmod(path, 0o700)
			}
			return nil
		})
		_ = os.RemoveAll(d)
	}
}

// probeOverlays finds out, once the launcher is chosen, whether the caches can be overlays
// here: where not, cachesWhy says why, and they are bound writable as before. A first
// overlay is mounted for that, on an empty cache, where the caches' own will be kept.
func (s *Sandbox) probeOverlays() string {
	p := s.policy
	switch {
	case p.Mode != ModeWorkspaceWrite || len(p.Caches) == 0:
		return ""
	case s.landlockOnly:
		return "no mount namespace in the Landlock-only form"
	case p.CacheState == "":
		return "keel has no directory of its own to keep their overlays in"
	case s.bwrap != "" && s.bwrapSetuid():
		return "a setuid bubblewrap leaves the helper no capability to mount them"
	}
	if why := p.cacheStateOverlap(); why != "" {
		return why
	}
	if err := os.MkdirAll(p.CacheState, 0o700); err != nil {
		return fmt.Sprintf("keel's directory for their overlays cannot be made: %v", err)
	}
	dir, err := os.MkdirTemp(p.CacheState, ".probe-")
	if err != nil {
		return fmt.Sprintf("keel's directory for their overlays is not writable: %v", err)
	}
	defer removeWorkDirs([]string{dir})
	lower := filepath.Join(dir, "cache")
	if err := os.Mkdir(lower, 0o700); err != nil {
		return fmt.Sprintf("keel's directory for their overlays is not writable: %v", err)
	}
	state := filepath.Join(dir, "state")
	if err := s.probeRun(s.bwrap, false, Policy{Mode: ModeWorkspaceWrite, Writable: []string{lower}, Caches: []string{lower}, CacheState: state}); err != nil {
		msg := reason(err)
		if _, after, ok := strings.Cut(msg, " as an overlay: "); ok {
			msg = strings.TrimSuffix(after, ")") // the helper's notice: only the kernel's answer
		}
		return "an overlay cannot be mounted here: " + msg
	}
	return ""
}

// bwrapSetuid reports whether s's bubblewrap is setuid root.
func (s *Sandbox) bwrapSetuid() bool {
	fi, err := os.Stat(s.bwrap)
	return err == nil && fi.Mode()&os.ModeSetuid != 0
}

// openOverlays opens the upper and work directories of each overlay, before anything covers
// them (keel's directory may be where the private /tmp is mounted). Through descriptors, no
// path of theirs is in the mount's options, where a comma or colon would be misread.
func openOverlays(overlays []overlay) ([][2]int, error) {
	out := make([][2]int, len(overlays))
	for i, o := range overlays {
		fds, err := openAll([]string{o.Upper, o.Work})
		if err != nil {
			return nil, err
		}
		out[i] = [2]int{fds[0], fds[1]}
	}
	return out, nil
}

// mountOverlay mounts o in the helper, its layers reached through descriptors opened before
// anything covered them: lower on the real cache, upperWork on keel's directories ([openOverlays]).
// userxattr keeps overlayfs's own attributes in the user. namespace, which a user namespace
// may write; volatile spares each command's end a sync of the whole file system that holds
// the upper layer (overlayfs syncs it as it is unmounted), at the price of what a crash of the
// machine may lose from the upper layer: a cache's entries, which a build makes again.
func mountOverlay(o overlay, lower int, upperWork [2]int) error {
	if _, err := os.Lstat(o.Dest); errors.Is(err, os.ErrNotExist) {
		// A cache in the private /tmp, which has no directory to mount on yet.
		if err := os.MkdirAll(o.Dest, 0o755); err != nil {
			return fmt.Errorf("mount %s as an overlay: %w", o.Dest, err)
		}
	}
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr,volatile", lower, upperWork[0], upperWork[1])
	if err := unix.Mount("overlay", o.Dest, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount %s as an overlay: %w", o.Dest, err)
	}
	return nil
}

// overlayOrBind mounts o; where the kernel refuses, the cache is bound writable from lower
// instead, as it was before overlays (made writable again when lower is on bubblewrap's
// read-only root), and the command's error output says so: the command runs all the same.
func overlayOrBind(o overlay, lower int, layers [2]int, fromReadOnly bool) error {
	err := mountOverlay(o, lower, layers)
	if err == nil {
		return nil
	}
	// Under bubblewrap not recursively: what bubblewrap mounted inside (a mask's unlinked file,
	// which nothing can be mounted over) is made again on top by setupOverlays.
	flags := uintptr(unix.MS_REC)
	if fromReadOnly {
		flags = 0
	}
	if berr := bindFD(lower, o.Dest, flags); berr != nil {
		return fmt.Errorf("%v; and bind it writable instead: %w", err, berr)
	}
	if fromReadOnly {
		if rerr := remount(o.Dest, false); rerr != nil {
			return fmt.Errorf("%v; and bind it writable instead: %w", err, rerr)
		}
	}
	fmt.Fprintf(os.Stderr, "keel sandbox: %s is writable as it is, not an overlay: what this command writes there reaches the builds run outside the sandbox (%v)\n", o.Dest, err)
	return nil
}

// setupOverlays is the helper's part under bubblewrap, which cannot mount overlays itself
// (0.8.0 has no --overlay): each cache's overlay, then keel's directory that holds them
// read-only again, then what bubblewrap made inside the caches and the overlays now cover —
// writable roots, always-read-only paths, masks — made again on top.
func setupOverlays(pl plan) error {
	if len(pl.Overlays) == 0 {
		return nil
	}
	var inside plan
	for _, w := range pl.Writable {
		if pl.overlayIndex(w) < 0 && pl.underOverlay(w) {
			inside.Writable = append(inside.Writable, w)
		}
	}
	keep := func(paths []string) []string {
		return slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return !pl.underOverlay(p) })
	}
	inside.ReadOnly, inside.Pinned, inside.Masked, inside.Unmasked = keep(pl.ReadOnly), keep(pl.Pinned), keep(pl.Masked), keep(pl.Unmasked)
	dests := make([]string, len(pl.Overlays))
	for i, o := range pl.Overlays {
		dests[i] = o.Dest
	}
	lowers, err := openAll(dests)
	if err != nil {
		return err
	}
	layers, err := openOverlays(pl.Overlays)
	if err != nil {
		return err
	}
	writable, err := openAll(inside.Writable)
	if err != nil {
		return err
	}
	unmasked, err := openAll(inside.Unmasked)
	if err != nil {
		return err
	}
	for i, o := range pl.Overlays {
		if err := overlayOrBind(o, lowers[i], layers[i], true); err != nil {
			return err
		}
	}
	if err := remountReadOnly(pl.CacheState); err != nil {
		return err
	}
	for i, w := range inside.Writable {
		if err := bindFD(writable[i], w, unix.MS_REC); err != nil {
			return fmt.Errorf("make %s writable: %w", w, err)
		}
	}
	if err := protect(inside); err != nil {
		return err
	}
	return mask(inside.Masked, inside.Unmasked, unmasked)
}
