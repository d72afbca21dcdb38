package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/waittest"
	"golang.org/x/sys/unix"
)

// workspaceSandbox is a workspace-write sandbox of a fresh workspace, not yet probed.
func workspaceSandbox(t *testing.T) (*Sandbox, string) {
	t.Helper()
	ws := t.TempDir()
	return New(NewPolicy(Input{Mode: ModeWorkspaceWrite, Settings: &settings.Sandbox{}, Dirs: []string{ws}}), Options{}), ws
}

// runIn runs script with sh in s, in dir, and returns its output and exit code.
func runIn(t *testing.T, s *Sandbox, dir, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	run, err := s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	run.Release()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// doctorLine is the detail of Doctor's line name.
func doctorLine(t *testing.T, s *Sandbox, name string) string {
	t.Helper()
	for _, f := range Doctor(context.Background(), s) {
		if f.Name == name {
			return f.Detail
		}
	}
	t.Fatalf("no %q line", name)
	return ""
}

// TestLauncherPrefersBwrap: with a bubblewrap recent enough installed, keel chooses it over
// its own helper, and the command runs under it (in a UTS namespace of its own, which only
// bubblewrap makes), confined (a write outside fails), and `keel doctor` says so.
func TestLauncherPrefersBwrap(t *testing.T) {
	path, version, err := findBwrap(context.Background())
	if err != nil {
		t.Skipf("bubblewrap is not usable here: %v", err)
	}
	s, ws := workspaceSandbox(t)
	if err := s.Available(); err != nil {
		t.Fatalf("%s at %s is installed, but the sandbox does not start: %v", version, path, err)
	}
	if s.bwrap != path || s.landlockOnly {
		t.Fatalf("with %s at %s installed, keel chose bwrap=%q landlockOnly=%v (why not bwrap: %s)", version, path, s.bwrap, s.landlockOnly, s.bwrapWhy)
	}
	outside := filepath.Join(visibleTestDir(t), "escaped")
	out, code := runIn(t, s, ws, "readlink /proc/self/ns/uts; echo pwned > "+outside+" || echo refused")
	if code != 0 || strings.Contains(out, hostUTS(t)) || !strings.Contains(out, "uts:[") || !strings.Contains(out, "refused") {
		t.Errorf("the command did not run confined under bubblewrap (exit %d):\n%s", code, out)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Error("a write outside the writable roots landed")
	}
	if d := doctorLine(t, s, "keel uses"); !strings.HasPrefix(d, version+" ("+path+")") || !strings.Contains(d, "preferred") {
		t.Errorf("keel uses: %s", d)
	}
	if d := doctorLine(t, s, "bubblewrap"); !strings.Contains(d, "used") || !strings.Contains(d, version) {
		t.Errorf("bubblewrap: %s", d)
	}
}

// hostUTS is keel's UTS namespace: keel's own helper keeps it, bubblewrap makes a new one.
func hostUTS(t *testing.T) string {
	t.Helper()
	id, err := os.Readlink("/proc/self/ns/uts")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// visibleTestDir is a directory outside every writable root that the sandbox shows
// read-only: beside the test's sources, not under /tmp, which is private to each command.
func visibleTestDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(wd, ".sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// fakeBwrap puts a bwrap that runs script (sh) first on PATH, and no bwrap at the fallback.
func fakeBwrap(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	noFallback(t)
	return path
}

func noFallback(t *testing.T) {
	old := bwrapFallback
	bwrapFallback = filepath.Join(t.TempDir(), "no-bwrap")
	t.Cleanup(func() { bwrapFallback = old })
}

// unsandboxedBwrap reports a recent version and runs the command after -- as it is, in no
// namespace: what keel must never accept as a sandbox.
const unsandboxedBwrap = `[ "$1" = --version ] && { echo bubblewrap 0.8.0; exit 0; }
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
exec "$@"
`

// TestLauncherFallsBack: where bubblewrap is missing, too old, unreadable, fails to start,
// or runs the command without the namespaces it was asked for, keel uses its own helper,
// and `keel doctor` says why bubblewrap was not used.
func TestLauncherFallsBack(t *testing.T) {
	if !userNamespaces() {
		t.Skip("user namespaces are disabled here: keel's own helper, the fallback, cannot run")
	}
	for name, c := range map[string]struct {
		script string // the fake bwrap; empty: none
		why    string
	}{
		"missing":    {why: "not installed"},
		"too old":    {script: "echo bubblewrap 0.4.1\n", why: "bubblewrap 0.4.1 at "},
		"old minor":  {script: "echo bubblewrap 0.4\n", why: "older than 0.5.0"},
		"unreadable": {script: "echo bwrap from the future\n", why: "not a version keel can read"},
		"fails": {script: `[ "$1" = --version ] && { echo bubblewrap 0.9.0; exit 0; }
echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1
`, why: "setting up uid map: Permission denied"},
		"unsandboxed": {script: unsandboxedBwrap, why: "did not make a new"},
	} {
		t.Run(name, func(t *testing.T) {
			if c.script == "" {
				old := bwrapName
				bwrapName = "keel-test-no-bwrap"
				t.Cleanup(func() { bwrapName = old })
				noFallback(t)
			} else {
				fakeBwrap(t, c.script)
			}
			s, ws := workspaceSandbox(t)
			if err := s.Available(); err != nil {
				t.Fatalf("the sandbox did not fall back to keel's own helper: %v", err)
			}
			if s.bwrap != "" || s.landlockOnly || !strings.Contains(s.bwrapWhy, c.why) {
				t.Errorf("bwrap=%q landlockOnly=%v why=%q; want keel's helper, because %q", s.bwrap, s.landlockOnly, s.bwrapWhy, c.why)
			}
			if d := doctorLine(t, s, "keel uses"); !strings.HasPrefix(d, "its own helper") || !strings.Contains(d, "bubblewrap not used: ") || !strings.Contains(d, c.why) {
				t.Errorf("keel uses: %s", d)
			}
			if out, code := runIn(t, s, ws, "readlink /proc/self/ns/uts"); code != 0 || !strings.Contains(out, hostUTS(t)) {
				t.Errorf("the command did not run under keel's helper (exit %d): %s", code, out)
			}
		})
	}
}

// TestBwrapUnsandboxedRefused: a bubblewrap that runs the command without making the
// namespaces never runs it: forced, the sandbox is unavailable; used anyway, the helper
// refuses to become the command and nothing it would have written lands.
func TestBwrapUnsandboxedRefused(t *testing.T) {
	if _, err := exec.LookPath("true"); err != nil {
		t.Skip(err)
	}
	fake := fakeBwrap(t, unsandboxedBwrap)
	testLauncher.Store(int32(launcherBwrap))
	t.Cleanup(func() { testLauncher.Store(int32(launcherAuto)) })
	forced, _ := workspaceSandbox(t)
	if err := forced.Available(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "did not make a new") {
		t.Fatalf("forced to a bwrap that makes no namespaces, the sandbox says %v", err)
	}
	s, ws := workspaceSandbox(t)
	s.probed = true // no probe: the fake bwrap is used as it is
	s.bwrap = fake
	outside := filepath.Join(visibleTestDir(t), "escaped")
	out, code := runIn(t, s, ws, "echo pwned > "+outside+"; echo ESCAPED")
	if code != helperFailed || strings.Contains(out, "ESCAPED") || !strings.Contains(out, "not run outside the sandbox") {
		t.Errorf("under a bwrap that makes no namespaces the command ran (exit %d):\n%s", code, out)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Error("the command wrote outside the writable roots")
	}
}

// TestBwrapVersion: versions are read from bwrap --version's line and compared as numbers.
func TestBwrapVersion(t *testing.T) {
	for in, want := range map[string][3]int{"bubblewrap 0.8.0": {0, 8, 0}, "bubblewrap 0.10.1\n": {0, 10, 1}, "bubblewrap 1.2": {1, 2, 0}, "bubblewrap v0.11.1": {0, 11, 1}} {
		if got, ok := parseBwrapVersion(in); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"bubblewrap", "bubblewrap 1", "bubblewrap 0.x.1", "bubblewrap 0.8.0.1"} {
		if v, ok := parseBwrapVersion(in); ok {
			t.Errorf("%q read as version %v", in, v)
		}
	}
}

// TestKillUnderBwrapLeavesNothingForInit kills a running command under bubblewrap the way
// keel stops a call (Run.Kill of its process group) and asserts that the sandbox's first
// process was collected by bubblewrap by the time bubblewrap was: killed together, as one
// group, it outlives keel's wait for the command, dying or a zombie left to the machine's
// init, which in a container may collect it late or never.
func TestKillUnderBwrapLeavesNothingForInit(t *testing.T) {
	if _, _, err := findBwrap(context.Background()); err != nil {
		t.Skipf("bubblewrap is not usable here: %v", err)
	}
	s, ws := workspaceSandbox(t)
	if err := s.Available(); err != nil || s.bwrap == "" {
		t.Fatalf("bubblewrap is installed, but the sandbox does not start under it: %v (why not: %s)", err, s.bwrapWhy)
	}
	cmd := exec.Command("sh", "-c", "sleep 600 & echo started; wait")
	cmd.Dir = ws
	run, err := s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Release()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	procgroup.Own(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("the command did not start: %q %v", line, err)
	}
	waittest.Recv(t, "bubblewrap's info", run.firstKnown)
	p := run.first.Load()
	if p == nil {
		t.Fatal("bubblewrap did not say which process is the sandbox's first")
	}
	if err := run.Kill(cmd.Process.Pid); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the killed command exited 0")
	}
	// Collected by bubblewrap before bubblewrap itself exited, so before Wait returned; killed
	// with bubblewrap as one group it would still be dying or waiting here for init.
	if err := syscall.Kill(p.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
		t.Fatalf("the sandbox's first process outlived bubblewrap (signal 0: %v): %s", err, st)
	}
	waittest.Until(t, "the command's process group to be gone", func() bool { return procgroup.Gone(cmd.Process.Pid) })
}

// TestKillWhileReleasedUnderBwrap: a caller may kill a command from one goroutine while
// another releases it, as a language server shut down just as it exits is; -race fails this
// test when the two touch the sandbox's first process unordered.
func TestKillWhileReleasedUnderBwrap(t *testing.T) {
	if _, _, err := findBwrap(context.Background()); err != nil {
		t.Skipf("bubblewrap is not usable here: %v", err)
	}
	s, ws := workspaceSandbox(t)
	if err := s.Available(); err != nil || s.bwrap == "" {
		t.Fatalf("bubblewrap is installed, but the sandbox does not start under it: %v (why not: %s)", err, s.bwrapWhy)
	}
	cmd := exec.Command("sh", "-c", "exit 0")
	cmd.Dir = ws
	run, err := s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	procgroup.Own(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waittest.Recv(t, "bubblewrap's info", run.firstKnown)
	released := make(chan struct{})
	go func() {
		defer close(released)
		_ = cmd.Wait()
		run.Release()
	}()
	_ = run.Kill(cmd.Process.Pid)
	waittest.Recv(t, "the release", released)
}

// TestInheritedDescriptorsStayOutside: a descriptor keel inherited without close-on-exec
// (from the shell or harness that started it; os/exec passes such descriptors to every
// child) is not open in a sandboxed command, through either launcher.
func TestInheritedDescriptorsStayOutside(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := int(w.Fd())
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil { // as inherited: no FD_CLOEXEC
		t.Fatal(err)
	}
	for _, l := range []string{"bwrap", "helper"} {
		t.Run(l, func(t *testing.T) {
			ForceLauncher(t, l)
			s, ws := workspaceSandbox(t)
			if err := s.Available(); err != nil {
				if l == "bwrap" {
					if _, _, ferr := findBwrap(context.Background()); ferr != nil {
						t.Skipf("bubblewrap is not usable here: %v", ferr)
					}
				}
				t.Fatalf("the sandbox does not start with %s: %v", l, err)
			}
			// Outside, the same command sees it: the check can tell.
			if out, _ := exec.Command("sh", "-c", fmt.Sprintf("test -e /proc/self/fd/%d && echo open", fd)).Output(); string(out) != "open\n" {
				t.Fatalf("an unsandboxed child does not see the inherited descriptor %d (%q): the check cannot tell", fd, out)
			}
			out, code := runIn(t, s, ws, fmt.Sprintf("test -e /proc/self/fd/%d && echo open || echo closed", fd))
			if code != 0 || out != "closed\n" {
				t.Errorf("descriptor %d inside the sandbox (exit %d): %q", fd, code, out)
			}
		})
	}
}
