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
// that cannot have them (no space left for them: a command can fill the disk) is bound
// read-only for this command instead, never writable, and the command's output says why.
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
			slog.Warn("sandbox: a toolchain cache is read-only for a command, its overlay's directories not made", "cache", w, "err", err)
			pl.Overlays = append(pl.Overlays, overlay{Dest: w, Failed: "keel could not make its directories: " + err.Error()})
			continue
		}
		pl.Overlays = append(pl.Overlays, overlay{Dest: w, Upper: upper, Work: work})
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
			if resetWorkDir(work) == nil {
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

// volatileMark is what a volatile overlay leaves in its work directory, below overlayfs's own
// directory there: as long as it is there, the kernel refuses to mount another overlay on it.
var volatileMark = []string{"work", "incompat", "volatile", "dirty"}

// resetWorkDir readies work, the work directory an earlier command's overlay left (or none),
// for the next mount. The usual case costs a few calls: the volatile mark taken away step by
// step ([volatileMark]), its directories given the permission overlayfs leaves them without
// first; whatever else overlayfs left in its own directory it clears itself as it mounts.
// Anything unexpected on the way (a step failing for another reason than the entry being
// gone) makes it anew, as a whole.
func resetWorkDir(work string) error {
	paths := make([]string, len(volatileMark))
	for i := range volatileMark {
		paths[i] = filepath.Join(append([]string{work}, volatileMark[:i+1]...)...)
	}
	ok := true
	for _, d := range paths[:len(paths)-1] {
		if err := os.Chmod(d, 0o700); err != nil {
			ok = errors.Is(err, fs.ErrNotExist)
			break
		}
	}
	for i := len(paths) - 1; ok && i > 0; i-- { // the file, then its directories; overlayfs's own stays
		if err := os.Remove(paths[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			ok = false
		}
	}
	if fi, err := os.Lstat(work); ok && err == nil && fi.IsDir() {
		return nil
	}
	removeWorkDirs([]string{work})
	return os.Mkdir(work, 0o700)
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
func (s *Sandbox) probeOverlays() (string, error) {
	p := s.policy
	switch {
	case p.Mode != ModeWorkspaceWrite || len(p.Caches) == 0:
		return "", nil
	case s.landlockOnly:
		return "no mount namespace in the Landlock-only form", nil
	case p.CacheState == "":
		return "keel has no directory of its own to keep their overlays in", nil
	case s.bwrap != "" && s.bwrapSetuid():
		return "a setuid bubblewrap leaves the helper no capability to mount them", nil
	}
	if why := p.cacheStateOverlap(); why != "" {
		return why, nil
	}
	// A disk or quota full (which a command can cause) is not a reason: the probe says
	// nothing, and each command whose overlay fails gets the cache read-only instead.
	if err := os.MkdirAll(p.CacheState, 0o700); err != nil {
		return unlessOutOfSpace(fmt.Sprintf("keel's directory for their overlays cannot be made: %v", err)), nil
	}
	dir, err := os.MkdirTemp(p.CacheState, ".probe-")
	if err != nil {
		return unlessOutOfSpace(fmt.Sprintf("keel's directory for their overlays is not writable: %v", err)), nil
	}
	defer removeWorkDirs([]string{dir})
	lower := filepath.Join(dir, "cache")
	if err := os.Mkdir(lower, 0o700); err != nil {
		return unlessOutOfSpace(fmt.Sprintf("keel's directory for their overlays is not writable: %v", err)), nil
	}
	state := filepath.Join(dir, "state")
	if err := s.probeRun(s.bwrap, false, Policy{Mode: ModeWorkspaceWrite, Writable: []string{lower}, Caches: []string{lower}, CacheState: state}); err != nil {
		if errors.Is(err, ErrBusy) && !outOfSpace(err.Error()) {
			// Not a reason to bind the real caches writable for the session: the probe is
			// made again with the next command. (A disk full is handled per command.)
			return "", err
		}
		return probeFailure(reason(err)), nil
	}
	// The helper mounted under this launcher: under bubblewrap it can bind and pin too.
	s.helperMounts = s.bwrap != ""
	return "", nil
}

// probeFailure is the probe's reason to bind the caches writable from what its command said,
// msg: only why, of the helper's note ([cacheNote]) — none for a disk or quota full.
func probeFailure(msg string) string {
	if _, after, ok := strings.Cut(msg, ", not an overlay ("); ok {
		msg, _, _ = strings.Cut(after, "): a build")
		if _, kernel, ok := strings.Cut(msg, " as an overlay: "); ok {
			msg = kernel
		}
	}
	return unlessOutOfSpace("an overlay cannot be mounted here: " + msg)
}

// unlessOutOfSpace is why, the probe's reason to bind the caches writable, unless it is a
// disk or quota full ([outOfSpace]): then "", overlays being possible here.
func unlessOutOfSpace(why string) string {
	if outOfSpace(why) {
		slog.Warn("sandbox: the probe of the caches' overlays found no space; each command's caches are overlays, or read-only where that fails", "why", why)
		return ""
	}
	return why
}

// bwrapSetuid reports whether s's bubblewrap is setuid root.
func (s *Sandbox) bwrapSetuid() bool {
	fi, err := os.Stat(s.bwrap)
	return err == nil && fi.Mode()&os.ModeSetuid != 0
}

// openOverlays opens the upper and work directories of each overlay, before anything covers
// them (keel's directory may be where the private /tmp is mounted). Through descriptors, no
// path of theirs is in the mount's options, where a comma or colon would be misread. A
// failed overlay has none (-1).
func openOverlays(overlays []overlay) ([][2]int, error) {
	out := make([][2]int, len(overlays))
	for i, o := range overlays {
		if o.Failed != "" {
			out[i] = [2]int{-1, -1}
			continue
		}
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

// mountCache mounts o; where keel could not make its directories (o.Failed) or the kernel
// refuses the mount, the cache is bound read-only from lower instead, for this command only,
// and the command's error output says so: the command runs all the same, and what it writes
// there fails rather than reaching the builds run outside the sandbox. (The session's probe
// decides, once, whether the caches are bound writable everywhere: no overlay in the plan.)
func mountCache(o overlay, lower int, layers [2]int, fromReadOnly bool) error {
	why := o.Failed
	if why == "" {
		err := mountOverlay(o, lower, layers)
		if err == nil {
			return nil
		}
		why = err.Error()
	}
	// Under bubblewrap not recursively: what bubblewrap mounted inside (a mask's unlinked file,
	// which nothing can be mounted over) is made again on top by setupOverlays.
	flags := uintptr(unix.MS_REC)
	if fromReadOnly {
		flags = 0
	}
	if err := bindFD(lower, o.Dest, flags); err != nil {
		return fmt.Errorf("%s; and bind %s read-only instead: %w", why, o.Dest, err)
	}
	if err := remountReadOnly(o.Dest); err != nil {
		return fmt.Errorf("%s; and bind it read-only instead: %w", why, err)
	}
	fmt.Fprintln(os.Stderr, cacheNote(o.Dest, why))
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
		if err := mountCache(o, lowers[i], layers[i], true); err != nil {
			return err
		}
	}
	if pl.CacheState != "" {
		if err := remountReadOnly(pl.CacheState); err != nil {
			return err
		}
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

// cacheNote is what a command's error output says when a cache is read-only for it, its
// overlay having failed for why.
func cacheNote(dest, why string) string {
	return fmt.Sprintf("keel sandbox: %s is read-only for this command, not an overlay (%s): a build that writes there may fail", dest, why)
}

// outOfSpace reports whether msg, an overlay's failure, is for want of space or quota: what
// a command can cause itself, so never a reason to think overlays impossible here.
func outOfSpace(msg string) bool {
	return strings.Contains(msg, unix.ENOSPC.Error()) || strings.Contains(msg, unix.EDQUOT.Error())
}
