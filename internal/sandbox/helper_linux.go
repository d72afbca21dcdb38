package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// controlFD is the helper's end of the socket on which it hands the proxy listener to the
// parent (the first of cmd.ExtraFiles).
const controlFD = 3

// runHelper is the helper's life inside the new namespaces: set up the file system and the
// network as pl says, confine itself (Landlock, capabilities, seccomp, no_new_privs) and
// become the command. It returns only on failure; the error is printed and the helper
// exits 125, so the command's own exit codes stay its own.
func runHelper(arg string) error {
	// Capabilities, no_new_privs and seccomp are per thread: everything happens on the thread
	// that finally calls execve.
	runtime.LockOSThread()
	var pl plan
	if err := json.Unmarshal([]byte(arg), &pl); err != nil {
		return fmt.Errorf("read sandbox plan: %w", err)
	}
	if pl.LandlockOnly {
		return runLandlockOnly(pl)
	}
	if pl.Bwrap {
		if err := checkBwrapped(pl); err != nil {
			return err
		}
		// Before the overlays, as bubblewrap would have: those inside one it makes again on top.
		if err := protect(plan{Pinned: pl.HelperPins, ReadOnly: pl.Held}); err != nil {
			return err
		}
		if err := setupOverlays(pl); err != nil {
			return err
		}
	} else if err := setupMounts(pl); err != nil {
		return err
	}
	env := append(os.Environ(), "TMPDIR=/tmp")
	if err := setupNetwork(pl, &env); err != nil {
		return err
	}
	if err := os.Chdir(pl.Dir); err != nil {
		return fmt.Errorf("enter %s inside the sandbox: %w", pl.Dir, err)
	}
	if pl.Landlock {
		applyLandlock(pl) // best effort: the mounts already hold the line
	}
	prog, err := exec.LookPath(pl.Argv[0])
	if err != nil {
		return fmt.Errorf("find %s inside the sandbox: %w", pl.Argv[0], err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := loadSeccomp(pl); err != nil {
		return err
	}
	closeInherited()
	return syscall.Exec(prog, pl.Argv, env)
}

// closeInherited marks every descriptor past stderr close-on-exec, so the command starts with
// stdin, stdout and stderr only: keel itself may have inherited descriptors without the flag
// (from the shell or harness that started it), which os/exec passes on to every child, and
// the sandbox's own descriptors are done with by now.
func closeInherited() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Before Linux 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// setupNetwork brings the namespace's loopback up (bubblewrap did already) and, with the proxy, listens on it and
// hands the listener to the parent, which serves keel's egress proxy on it from outside:
// the only way out. The command's proxy variables point at it.
func setupNetwork(pl plan, env *[]string) error {
	if !pl.Bwrap {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if !pl.Proxy {
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the proxy inside the sandbox: %w", err)
	}
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("hand over the proxy listener: %w", err)
	}
	l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	if err := unix.Sendmsg(controlFD, []byte(port), unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return fmt.Errorf("hand over the proxy listener: %w", err)
	}
	f.Close()
	unix.Close(controlFD)
	*env = proxyEnv(*env, port)
	return nil
}

// loopbackUp sets lo up: a new network namespace starts with it down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	return nil
}

// dropCapabilities leaves the command no capability in the sandbox's user namespace, so that
// it cannot undo a mount even as uid 0 inside: ambient and bounding sets cleared, then the
// effective, permitted and inheritable sets. A capability already out of the bounding set is
// left alone: bubblewrap clears the set for a non-root user, and the helper then lacks the
// CAP_SETPCAP a drop needs.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("drop ambient capabilities: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err == nil && in == 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}
