package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/procgroup"
	"golang.org/x/sys/unix"
)

// Run is one confined command's link to keel: the proxy serving it, the placeholders it
// holds. Release it once the command has exited.
type Run struct {
	s            *Sandbox
	placeholders []string
	control      *net.UnixConn
	cancel       context.CancelFunc
	wg           sync.WaitGroup

	// tmp is the private temp directory of a Landlock-only run, removed on release.
	tmp string
	// workDirs are the work directories of the run's cache overlays, removed on release.
	workDirs []string
	// files are keel's copies of descriptors the command was started with (bubblewrap's
	// empty files for the masks), closed on release.
	files []*os.File
	// first is the sandbox's first process when bubblewrap runs the command (its --info-fd
	// says which), once known; firstKnown is closed when bubblewrap has said it, or cannot any
	// more. The handle is a pidfd: a PID reused after bubblewrap collected the process is
	// never signalled.
	first      atomic.Pointer[os.Process]
	firstKnown chan struct{}
	// firstMu orders killing the first process with releasing it (os.Process.Release clears
	// its Pid): a caller may Kill from one goroutine while another Releases — a language
	// server shut down as it exits.
	firstMu sync.Mutex

	refused refusals
	planted plantWatch
}

// Confine rewrites cmd, not yet started, to run inside the sandbox: bubblewrap, or else keel
// re-executed as the helper, in new user, mount, PID, network and IPC namespaces, which sets
// the sandbox up and becomes cmd's program. extra are more paths the command may write.
// cmd.Dir must be set.
func (s *Sandbox) Confine(cmd *exec.Cmd, extra ...string) (*Run, error) {
	if err := s.Available(); err != nil {
		return nil, err
	}
	if p := s.complete(); len(p.Problems) > 0 {
		return nil, fmt.Errorf("sandbox: the command is not run: %s", strings.Join(p.Problems, "; "))
	}
	return s.confine(cmd, extra, false)
}

// ConfineAtTerminal is Confine for a command the user runs in the foreground of their own
// terminal (`keel sandbox -- bash` typed there): it keeps the terminal — in keel's session,
// its shell's job control working — where every other command runs in a session of its own.
// Use it for nothing the user did not start themselves at that terminal.
func (s *Sandbox) ConfineAtTerminal(cmd *exec.Cmd) (*Run, error) {
	if err := s.Available(); err != nil {
		return nil, err
	}
	if p := s.complete(); len(p.Problems) > 0 {
		return nil, fmt.Errorf("sandbox: the command is not run: %s", strings.Join(p.Problems, "; "))
	}
	return s.confine(cmd, nil, true)
}

func (s *Sandbox) confine(cmd *exec.Cmd, extra []string, terminal bool) (*Run, error) {
	if !terminal {
		detach(cmd)
	}
	if s.landlockOnly {
		return s.confineLandlockOnly(cmd, extra, terminal)
	}
	r := &Run{s: s}
	var err error
	if r.placeholders, err = s.hold(s.complete().absentReadOnly()); err != nil {
		r.Release()
		return nil, err
	}
	r.planted.start(s, s.complete())
	dir := cmd.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	argv := slices.Clone(cmd.Args)
	argv[0] = cmd.Path
	pl := s.withObjectMasks(s.complete()).newPlan(dir, argv, envPath(cmd.Env), extra)
	pl.Terminal = terminal
	s.overlayCaches(r, s.complete(), &pl)
	if s.bwrap != "" {
		err = s.wrapBwrap(cmd, r, pl)
	} else {
		err = s.wrapHelper(cmd, r, pl)
	}
	if err != nil {
		r.Release()
		return nil, err
	}
	return r, nil
}

// detach makes cmd start in a session of its own, with no controlling terminal: keel's
// terminal is then out of its reach — /dev/tty fails with ENXIO, so it can neither take the
// terminal's foreground and read what the user types to keel, nor write escape sequences
// (a window title, OSC 52's clipboard) past keel's rendering of its output. A session's
// leader leads a process group too, whose id is its PID, so it is signalled as a group as
// before ([Run.Kill], procgroup.Own leaves it so). Under bubblewrap the session is
// bubblewrap's, which the sandbox's processes stay in (bwrapArgs).
func detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Setsid = true
	// setpgid fails on a session's leader; the others would hand it a terminal again.
	a.Setpgid, a.Pgid, a.Setctty, a.Foreground = false, 0, false, false
}

// wrapHelper makes cmd start keel's helper in new user, mount, PID, network and IPC
// namespaces, where it carries out pl and becomes the command.
func (s *Sandbox) wrapHelper(cmd *exec.Cmd, r *Run, pl plan) error {
	if err := s.runAsHelper(cmd, pl); err != nil {
		return err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	attr := cmd.SysProcAttr
	attr.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWIPC
	uid, gid := os.Getuid(), os.Getgid()
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	// The helper keeps what it needs to build the sandbox across its own exec as a non-root
	// user inside; it drops every capability before it becomes the command.
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	if pl.Proxy {
		if err := r.bridge(cmd); err != nil {
			return err
		}
	}
	cmd.Path = s.helperFD(cmd)
	return nil
}

// jsonPlan is pl in JSON, in pieces of at most maxArgLen bytes: the kernel takes no longer
// single argument (MAX_ARG_STRLEN), and a plan that protects hundreds of repositories is
// longer than that. Dispatch joins the pieces.
func jsonPlan(pl plan) ([]string, error) {
	data, err := json.Marshal(pl)
	if err != nil {
		return nil, fmt.Errorf("encode sandbox plan: %w", err)
	}
	var pieces []string
	for s := string(data); s != ""; {
		n := min(len(s), maxArgLen)
		pieces, s = append(pieces, s[:n]), s[n:]
	}
	return pieces, nil
}

// maxArgLen keeps each argument under the kernel's limit on one (32 pages).
const maxArgLen = 64 << 10

// envPath is PATH in env, the command's environment (nil: keel's own).
func envPath(env []string) string {
	if env == nil {
		return os.Getenv("PATH")
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v // the last one wins, as in exec
		}
	}
	return path
}

// bridge gives the helper one end of a socket pair on which it sends back the listener it
// opened on the sandbox's loopback; keel accepts on it from outside and serves its proxy.
func (r *Run) bridge(cmd *exec.Cmd) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("create the sandbox's control socket: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "sandbox-control"), os.NewFile(uintptr(fds[1]), "sandbox-control-child")
	if len(cmd.ExtraFiles) != 0 {
		parent.Close()
		child.Close()
		return fmt.Errorf("sandbox: the command already passes extra files")
	}
	cmd.ExtraFiles = []*os.File{child}
	fc, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		child.Close()
		return fmt.Errorf("sandbox control socket: %w", err)
	}
	r.control = fc.(*net.UnixConn)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Go(func() {
		defer child.Close() // the helper holds its copy once started
		r.serve(ctx)
	})
	return nil
}

// serve receives the listener and serves the proxy on it until the run is released.
func (r *Run) serve(ctx context.Context) {
	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := r.control.ReadMsgUnix(buf, oob)
	if err != nil {
		return // the helper ended, or failed before it got to the network
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return
	}
	lf := os.NewFile(uintptr(fds[0]), "sandbox-proxy")
	l, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return
	}
	serveProxy(ctx, l, r.s.proxy, &r.refused, &connSlots{max: maxRunProxyConns}, &r.s.proxyConns)
}

// Release ends what the run holds — the proxy's connections, the placeholders — and returns
// the connections the proxy refused, each as "host: why". Call it once the command exited.
func (r *Run) Release() []string {
	if r == nil {
		return nil
	}
	if r.cancel != nil {
		r.cancel()
	}
	if r.control != nil {
		r.control.Close()
	}
	// Closed before the wait: the reader of bubblewrap's info pipe ends on it.
	for _, f := range r.files {
		f.Close()
	}
	r.wg.Wait()
	r.firstMu.Lock()
	if p := r.first.Swap(nil); p != nil {
		p.Release()
	}
	r.firstMu.Unlock()
	r.s.release(r.placeholders)
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
	removeWorkDirs(r.workDirs)
	r.planted.finish(r.s)
	return r.refused.all()
}

// Kill ends the confined command started as the leader of process group pgid (see
// procgroup.Own) and everything it started. Under bubblewrap the sandbox's first process is
// killed first — the kernel then ends everything in its PID namespace — and bubblewrap, its
// parent, is left to collect it and exit: killed together with it, as the group, bubblewrap
// would leave its child to be collected by the machine's init, which in a container without
// one never happens. The group is killed after that in any case. A nil Run kills the group.
func (r *Run) Kill(pgid int) error {
	if r != nil && r.firstKnown != nil {
		r.killFirst()
	}
	return procgroup.Kill(pgid)
}

// firstGrace bounds the waits of killFirst: for bubblewrap to say which process is the
// sandbox's first (it does once it started it, in microseconds) and to collect it once
// killed. Past it, the group is killed anyway.
const firstGrace = 2 * time.Second

// killFirst kills the sandbox's first process and waits, up to firstGrace, until bubblewrap
// has collected it.
func (r *Run) killFirst() {
	t := time.NewTimer(firstGrace)
	defer t.Stop()
	select {
	case <-r.firstKnown:
	case <-t.C:
		return
	}
	r.firstMu.Lock()
	p, pid := r.first.Load(), 0
	if p != nil && p.Kill() == nil {
		pid = p.Pid
	}
	r.firstMu.Unlock()
	if pid == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), firstGrace)
	defer cancel()
	procgroup.WaitReaped(ctx, pid)
}

// hold makes (or shares) a placeholder for each absent always-read-only path, which the
// helper then binds read-only so that the command cannot create the real one. Placeholders
// are empty directories without write permission, files included: git shows and adds no
// empty directory, so a `git add -A` inside cannot commit a placeholder, and a program
// reading one as a file fails instead of reading an empty configuration.
//
// Other keel processes in an overlapping workspace (teammates, a second session) share
// placeholders: each holder keeps the directory open with a shared flock, and the last one
// to let go — the one that can turn its lock exclusive — removes it. A placeholder left by a
// keel that was killed is taken over and removed the same way.
func (s *Sandbox) hold(paths []string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var held []string
	for _, p := range paths {
		if s.placeholders[p] == 0 {
			f, err := acquirePlaceholder(p)
			if errors.Is(err, errRealFile) {
				continue // made meanwhile by someone else: it is real, and bound as it is
			}
			if err != nil {
				s.releaseLocked(held)
				return nil, fmt.Errorf("protect %s: %w", p, err)
			}
			s.placeholderFiles[p] = f
		}
		s.placeholders[p]++
		held = append(held, p)
	}
	return held, nil
}

// errRealFile says a path is not a placeholder but something real.
var errRealFile = errors.New("a real file")

// acquirePlaceholder makes the placeholder p, or joins the one there, and returns it open
// with a shared lock.
func acquirePlaceholder(p string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	for range 100 {
		if err := makePlaceholder(p); err != nil && !os.IsExist(err) {
			return nil, err
		}
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed by its last holder meanwhile
		}
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil || !isPlaceholder(p, fi) {
			f.Close()
			return nil, errRealFile
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
			f.Close()
			return nil, err
		}
		if now, err := os.Lstat(p); err == nil && os.SameFile(now, fi) {
			return f, nil
		}
		f.Close() // the last holder removed it before our lock: make it again
	}
	return nil, errors.New("the placeholder keeps disappearing")
}

// makePlaceholder makes the placeholder p: an empty directory without write permission, or
// for a path filePlaceholder knows a file without it, made whole under another name and linked
// into place, so that no git run meanwhile reads it half made.
func makePlaceholder(p string) error {
	content, ok := filePlaceholder(p)
	if !ok {
		return os.Mkdir(p, 0o555)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".keel-placeholder-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o444)
	}
	if err == nil {
		err = os.Link(tmp, p)
	}
	return err
}

func (s *Sandbox) release(paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(paths)
}

// releaseLocked drops one hold on each placeholder; one this process no longer holds is
// removed if no other process holds it either and it is still an empty placeholder.
func (s *Sandbox) releaseLocked(paths []string) {
	for _, p := range paths {
		s.placeholders[p]--
		if s.placeholders[p] > 0 {
			continue
		}
		delete(s.placeholders, p)
		f := s.placeholderFiles[p]
		delete(s.placeholderFiles, p)
		if f == nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if fi, err := os.Lstat(p); err == nil && isPlaceholder(p, fi) {
				if mine, err := f.Stat(); err == nil && os.SameFile(mine, fi) {
					os.Remove(p)
				}
			}
		}
		f.Close()
	}
}

// probe finds how commands run in the sandbox here, trying each launcher in turn with
// `true`: bubblewrap when it is installed and recent enough, else keel's own helper, else
// (user namespaces blocked) Landlock alone — unless failIfUnavailable asks for the full
// sandbox or none. It reports what failed when nothing works.
func (s *Sandbox) probe() error {
	err := s.probeLauncher()
	if err == nil {
		s.cachesWhy, err = s.probeOverlays()
	}
	return err
}

// probeLauncher chooses what sets up the commands' namespaces: bubblewrap, keel's own
// helper, or Landlock alone.
func (s *Sandbox) probeLauncher() error {
	if s.exeErr != nil {
		return fmt.Errorf("%w: no keel executable to run the sandbox helper (%v); call sandbox.Dispatch first in main", ErrUnavailable, s.exeErr)
	}
	force := launcher(testLauncher.Load())
	if force != launcherHelper {
		err := s.probeBwrap()
		if err == nil || errors.Is(err, ErrBusy) {
			return err // a full limit is no reason to choose another launcher
		}
		s.bwrapWhy = err.Error()
		if force == launcherBwrap {
			return fmt.Errorf("%w: bubblewrap: %v", ErrUnavailable, err)
		}
	} else {
		s.bwrapWhy = "not tried"
	}
	err := s.probeNamespaces()
	if err == nil || force == launcherHelper || LandlockABI() < 1 || errors.Is(err, ErrBusy) {
		return err
	}
	// User namespaces are blocked: Landlock alone, if it starts.
	if s.probeRun("", true, Policy{Mode: ModeReadOnly}) != nil {
		return err
	}
	limits := s.landlockOnlyLimits()
	if s.policy.RefuseLimited {
		return fmt.Errorf("%w: the full sandbox needs user namespaces (%v; bubblewrap: %s), and only the weaker Landlock-only form could start, which is refused instead of used: %s",
			ErrUnavailable, reason(err), s.bwrapWhy, limits)
	}
	s.landlockOnly, s.limited = true, limits
	return nil
}

// reason is err's message without the "sandbox unavailable: " it starts with.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": ")
}

// probeNamespaces runs `true` in the namespaces keel's helper makes.
func (s *Sandbox) probeNamespaces() error {
	if testNoUserNamespaces.Load() || !userNamespaces() {
		return fmt.Errorf("%w: user namespaces are disabled (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or AppArmor's kernel.apparmor_restrict_unprivileged_userns)", ErrUnavailable)
	}
	return s.probeRun("", false, Policy{Mode: ModeReadOnly})
}

// probeRun runs `true` in the sandbox of p: under bwrap when it names one, else in keel's
// own namespaces or, with landlockOnly, under Landlock alone.
func (s *Sandbox) probeRun(bwrap string, landlockOnly bool, p Policy) error {
	truth, err := hostexec.Path("true")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	probe := New(p, Options{Executable: s.exe})
	probe.exeFile = s.exeFile
	probe.landlockOnly, probe.bwrap = landlockOnly, bwrap
	cmd := exec.Command(truth)
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	run, err := probe.confine(cmd, nil, false)
	if err != nil {
		if busy(err, "") {
			return fmt.Errorf("%w: %v", ErrBusy, err)
		}
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	err = cmd.Run()
	run.Release()
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = err.Error()
		}
		if busy(err, msg) {
			return fmt.Errorf("%w: %s", ErrBusy, msg)
		}
		return fmt.Errorf("%w: %s", ErrUnavailable, msg)
	}
	if len(p.Caches) > 0 && out.Len() > 0 {
		// The overlays' probe: the helper bound the cache instead, and said why.
		return fmt.Errorf("%w: %s", ErrUnavailable, strings.TrimSpace(out.String()))
	}
	return nil
}

// runAsHelper makes cmd start the sandbox's helper with pl, the plan it carries out before it
// becomes the command.
func (s *Sandbox) runAsHelper(cmd *exec.Cmd, pl plan) error {
	pieces, err := jsonPlan(pl)
	if err != nil {
		return err
	}
	cmd.Path = s.exe
	cmd.Args = append([]string{s.exe, helperArg}, pieces...)
	return nil
}
