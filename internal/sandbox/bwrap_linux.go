package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/keel-dev/keel/internal/hostexec"
)

// Bubblewrap (Debian's bubblewrap package, `bwrap`) sets up the namespaces and the mounts
// when it is installed and recent enough; keel's helper then runs inside it as its last
// stage — Landlock, capabilities, seccomp, no_new_privs, the proxy's hand-off — exactly as
// after its own namespace set-up. Where AppArmor lets only bwrap create user namespaces
// (Ubuntu 24.04 and later), this is what gives the whole sandbox instead of Landlock alone.

// bwrapMinVersion is the oldest bubblewrap keel uses: --perms before --tmpfs, which gives the
// private /tmp its mode 1777 and the masks theirs, came in 0.5.0; every other option it
// passes (--unshare-all, --die-with-parent, --as-pid-1, --ro-bind-data, --remount-ro) is
// older. Debian
// bookworm ships 0.8.0; bullseye's 0.4.1 is too old, and keel's own helper is used there.
var bwrapMinVersion = [3]int{0, 5, 0}

// bwrapName is looked up on PATH, and bwrapFallback, where Debian installs it, tried when
// PATH has none (a service's short PATH). Tests point them elsewhere.
var (
	bwrapName     = "bwrap"
	bwrapFallback = "/usr/bin/bwrap"
)

// launcher says which program sets up a command's namespaces.
type launcher int32

const (
	// launcherAuto chooses: bubblewrap when usable, else keel's helper, else Landlock only.
	launcherAuto launcher = iota
	// launcherBwrap is bubblewrap, and nothing else.
	launcherBwrap
	// launcherHelper is keel's own helper, never bubblewrap.
	launcherHelper
)

// testLauncher forces a launcher (a [launcher]), so that tests run the escape suite through
// each one; launcherAuto in keel.
var testLauncher atomic.Int32

// findBwrap finds bwrap on PATH (else at bwrapFallback) and reads its version. It reports why
// there is none that keel can use.
func findBwrap(ctx context.Context) (path, version string, err error) {
	path, err = hostexec.Path(bwrapName)
	if err != nil {
		if fi, serr := os.Stat(bwrapFallback); serr == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			path, err = bwrapFallback, nil
		}
	}
	if err != nil {
		return "", "", errors.New("not installed (Debian's bubblewrap package)")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return path, "", fmt.Errorf("%s --version failed: %v", path, err)
	}
	version = strings.TrimSpace(string(out))
	v, ok := parseBwrapVersion(version)
	if !ok {
		return path, version, fmt.Errorf("%s says %q, not a version keel can read", path, version)
	}
	if slices.Compare(v[:], bwrapMinVersion[:]) < 0 {
		return path, version, fmt.Errorf("%s at %s is older than %s, the oldest keel uses", version, path, versionString(bwrapMinVersion))
	}
	return path, version, nil
}

// parseBwrapVersion reads "bubblewrap 0.8.0": the first word that is a dotted number ("v"
// before it allowed), with its patch level 0 when absent. (No regular expression: keel's start-up builds none for
// this.)
func parseBwrapVersion(s string) ([3]int, bool) {
	for _, word := range strings.Fields(s) {
		parts := strings.Split(strings.TrimPrefix(word, "v"), ".")
		if len(parts) < 2 || len(parts) > 3 {
			continue
		}
		var v [3]int
		ok := true
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			ok = ok && err == nil && n >= 0
			v[i] = n
		}
		if ok {
			return v, true
		}
	}
	return [3]int{}, false
}

func versionString(v [3]int) string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

// probeBwrap finds a usable bubblewrap and starts `true` under it; on success the sandbox
// uses it from then on.
func (s *Sandbox) probeBwrap() error {
	if testNoUserNamespaces.Load() {
		return errors.New("not tried: user namespaces are blocked here")
	}
	path, version, err := findBwrap(context.Background())
	s.bwrapVersion = version
	if err != nil {
		return err
	}
	if err := s.probeRun(path, false, Policy{Mode: ModeReadOnly}); err != nil {
		if errors.Is(err, ErrBusy) {
			return err
		}
		return fmt.Errorf("%s at %s cannot start the sandbox: %s", version, path, reason(err))
	}
	s.bwrap = path
	return nil
}

// wrapBwrap makes cmd start bubblewrap, which sets up the namespaces and mounts of pl and
// runs keel's helper inside them, which finishes the sandbox (Landlock, seccomp,
// no_new_privs, the proxy) and becomes the command. The helper checks that it really is in
// new namespaces under a read-only root, so a bwrap that did not build them never runs a
// command outside the sandbox.
func (s *Sandbox) wrapBwrap(cmd *exec.Cmd, r *Run, pl plan) error {
	fi, err := os.Stat(s.bwrap)
	if err != nil {
		return fmt.Errorf("start bubblewrap: %w", err)
	}
	setuid := fi.Mode()&os.ModeSetuid != 0
	pl.Bwrap = true
	if pl.OuterNS, err = namespaceIDs(!setuid); err != nil {
		return err
	}
	if !setuid && s.helperMounts {
		pl.Held, pl.HelperPins = pl.heldByHelper(r.placeholders), pl.pinsByHelper()
	}
	if err := s.runAsHelper(cmd, pl); err != nil {
		return err
	}
	helper := cmd.Args
	if pl.Proxy {
		if err := r.bridge(cmd); err != nil {
			return err
		}
	}
	infoFD, err := r.readBwrapInfo(cmd)
	if err != nil {
		return err
	}
	// Each masked file is covered by a read-only copy of an empty file bwrap reads from a
	// descriptor of its own: /dev/null, passed once per file after the control socket.
	files := 0
	args := bwrapArgs(pl, s.exe, setuid, 3+len(cmd.ExtraFiles), &files)
	args = append([]string{"--info-fd", strconv.Itoa(infoFD)}, args...)
	if files > 0 {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return fmt.Errorf("open %s for bubblewrap: %w", os.DevNull, err)
		}
		r.files = append(r.files, null)
		for range files {
			cmd.ExtraFiles = append(cmd.ExtraFiles, null)
		}
	}
	helper[0] = s.helperFD(cmd) // bubblewrap runs the held helper, never its path again
	cmd.Path = s.bwrap
	cmd.Args = append(append(append([]string{s.bwrap}, args...), "--"), helper...)
	return nil
}

// readBwrapInfo passes bubblewrap a pipe for its --info-fd, on which it writes the host PID
// of the sandbox's first process once it started it, and takes a handle on that process into
// r.first. It
// returns the descriptor number the pipe has in bubblewrap.
func (r *Run) readBwrapInfo(cmd *exec.Cmd) (int, error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("create bubblewrap's info pipe: %w", err)
	}
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, wr)
	// keel's copy of the write end closes on release: then a bwrap that never wrote (it failed
	// to start) ends the read with EOF.
	r.files = append(r.files, wr, rd)
	r.firstKnown = make(chan struct{})
	r.wg.Go(func() {
		defer close(r.firstKnown)
		var info struct {
			ChildPID int64 `json:"child-pid"`
		}
		if json.NewDecoder(rd).Decode(&info) != nil || info.ChildPID <= 0 {
			return
		}
		if p, err := os.FindProcess(int(info.ChildPID)); err == nil {
			r.first.Store(p)
		}
	})
	return fd, nil
}

// bwrapArgs are bubblewrap's options for pl: new user (unless bwrap is setuid, which needs
// none), PID, network, IPC, UTS and cgroup namespaces; the root read-only; a private /dev,
// /proc and /tmp; the helper program exe where the private /tmp would hide it (a test
// binary, a keel run from a temporary build); the writable roots, the directories kept on PATH, the pinned .git
// directories and the always-read-only paths (but those the helper binds, plan.HelperPins and plan.Held), the copies of packs and the unreadable files that
// hide masked files' blobs ([Sandbox.HideObjects]), the masks and their exceptions in the order
// [setupMounts] makes them. firstFD is the descriptor of the first empty file for a mask;
// files is set to how many are needed.
//
// --new-session is not passed: keel starts bubblewrap itself in a session of its own
// ([detach]), which the sandbox's processes stay in, with no controlling terminal — and in
// bubblewrap's process group, which keel stops a command by signalling, as under keel's own
// helper (--new-session would take them out of it). --as-pid-1
// makes the helper, and so the command, PID 1 of the sandbox, as under keel's own helper,
// without bwrap's own init: one process less to start and schedule (half of bwrap's wall time
// on a loaded machine).
func bwrapArgs(pl plan, exe string, setuid bool, firstFD int, files *int) []string {
	a := []string{"--unshare-all", "--die-with-parent", "--as-pid-1"}
	if !setuid {
		a = append(a, "--unshare-user")
	}
	a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	if !slices.Contains(pl.Writable, "/tmp") {
		a = append(a, "--perms", "1777", "--tmpfs", "/tmp")
		if within(exe, "/tmp") {
			a = append(a, "--ro-bind", exe, exe)
		}
	}
	bind := func(opt string, paths []string) {
		for _, p := range paths {
			a = append(a, opt, p, p)
		}
	}
	for _, w := range pl.Writable {
		switch {
		case pl.overlayIndex(w) < 0:
			a = append(a, "--bind", w, w)
		case within(w, "/tmp"):
			// A cache in the private /tmp: shown read-only there, the overlay's lower layer.
			a = append(a, "--ro-bind", w, w)
		}
	}
	bind("--ro-bind", pl.Visible)
	for _, g := range pl.Pinned {
		if !slices.Contains(pl.HelperPins, g) { // the helper pins those ([plan.HelperPins])
			a = append(a, "--bind", g, g)
		}
	}
	for _, r := range pl.ReadOnly {
		if !slices.Contains(pl.Held, r) { // the helper binds those ([plan.Held])
			a = append(a, "--ro-bind", r, r)
		}
	}
	for _, b := range pl.Objects {
		a = append(a, "--ro-bind", b.Src, b.Dest)
	}
	for _, u := range pl.Unreadable {
		a = append(a, "--perms", "0000", "--ro-bind-data", strconv.Itoa(firstFD+*files), u)
		*files++
	}
	var dirs []string
	for _, m := range pl.Masked {
		if withinAny(m, dirs) {
			continue // under a masked directory already
		}
		fi, err := os.Lstat(m)
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			a = append(a, "--perms", "0755", "--tmpfs", m)
			dirs = append(dirs, m)
		default:
			a = append(a, "--perms", "0444", "--ro-bind-data", strconv.Itoa(firstFD+*files), m)
			*files++
		}
	}
	bind("--ro-bind", pl.Unmasked)
	for _, d := range dirs {
		a = append(a, "--remount-ro", d)
	}
	if (len(pl.Overlays) > 0 || len(pl.Held) > 0 || len(pl.HelperPins) > 0) && !setuid {
		// The helper mounts the caches' overlays ([setupOverlays]), pins directories and binds
		// the placeholders (plan.HelperPins, plan.Held) with these, and drops them. keel's directory for the overlays is bound
		// last, writable over whatever made it read-only (none when every overlay failed:
		// those caches are bound read-only).
		a = append(a, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
		if len(pl.Overlays) > 0 && pl.CacheState != "" {
			a = append(a, "--bind", pl.CacheState, pl.CacheState)
		}
	}
	return a
}

// namespaces are the namespaces bubblewrap must make new; user only when it is not setuid.
var namespaces = []string{"mnt", "pid", "net", "ipc", "user"}

// namespaceIDs are this process's namespaces ("net:[4026531840]"), by name.
func namespaceIDs(user bool) (map[string]string, error) {
	ids := map[string]string{}
	for _, ns := range namespaces {
		if ns == "user" && !user {
			continue
		}
		id, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return nil, fmt.Errorf("read this process's %s namespace: %w", ns, err)
		}
		ids[ns] = id
	}
	return ids, nil
}

// checkBwrapped is the helper's check, under bubblewrap, that it runs in the sandbox
// bubblewrap was asked for: in namespaces other than keel's, under a read-only root.
// Anything else (a bwrap that ignored its options, a stand-in that only runs the command) is
// an error, and the command does not run.
func checkBwrapped(pl plan) error {
	inside, err := namespaceIDs(pl.OuterNS["user"] != "")
	if err != nil {
		return err
	}
	for ns, outer := range pl.OuterNS {
		if inside[ns] == outer {
			return fmt.Errorf("bubblewrap did not make a new %s namespace (%s): the command is not run outside the sandbox", ns, outer)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
		return errors.New("bubblewrap left the root writable: the command is not run outside the sandbox")
	}
	return nil
}
