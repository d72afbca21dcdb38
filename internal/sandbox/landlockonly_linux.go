package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testNoUserNamespaces makes the probe act as on a machine whose user namespaces are
// blocked, so that tests reach the Landlock-only fallback here.
var testNoUserNamespaces atomic.Bool

// Landlock's network rules (ABI 4), which golang.org/x/sys does not describe.
const llRuleNetPort = 2

type llNetPortAttr struct {
	allowed uint64
	port    uint64
}

// devWritable are the devices a command writes to in the Landlock-only fallback, where /dev
// is the host's own (its /dev/shm shared with every process).
var devWritable = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// landlockOnlyLimits says what the Landlock-only fallback confines and what it cannot, for
// `keel doctor` and the session's notice.
func (s *Sandbox) landlockOnlyLimits() string {
	var b strings.Builder
	b.WriteString("Landlock only (user namespaces blocked): writes confined to the writable roots and a private TMPDIR (not /tmp itself); ")
	b.WriteString(".git/config, .git/hooks and the other protected paths inside the workspace are not protected, and denyRead/Read deny rules are not masked; ")
	if LandlockABI() >= 4 {
		b.WriteString("TCP limited to keel's proxy (by port, on any address)")
		if !s.policy.Network.AllowLocalBinding {
			b.WriteString(", no TCP listening")
		}
		b.WriteString("; UDP not contained")
	} else {
		b.WriteString("network not contained (Landlock ABI < 4): the proxy variables are set, but nothing forces their use")
	}
	b.WriteString("; other processes of this user are visible, and the terminal keel runs in is reachable by its /dev/pts name (though not as the command's controlling terminal); enable unprivileged user namespaces for the full sandbox")
	return b.String()
}

// confineLandlockOnly rewrites cmd to run under the helper without new namespaces: the
// helper applies Landlock and seccomp to itself and becomes the command. The private temp
// directory and the proxy's listener (on the host's loopback) live as long as the run.
func (s *Sandbox) confineLandlockOnly(cmd *exec.Cmd, extra []string, terminal bool) (*Run, error) {
	r := &Run{s: s}
	dir := cmd.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	tmp, err := os.MkdirTemp("", "keel-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("make the sandbox's private temp directory: %w", err)
	}
	r.tmp = tmp
	argv := slices.Clone(cmd.Args)
	argv[0] = cmd.Path
	pl := s.complete().newPlan(dir, argv, envPath(cmd.Env), append(slices.Clone(extra), tmp))
	pl.LandlockOnly, pl.Tmp, pl.Bind, pl.Terminal = true, tmp, s.policy.Network.AllowLocalBinding, terminal
	// What only the namespaces could do is left out of the plan.
	pl.ReadOnly, pl.Pinned, pl.Masked, pl.Unmasked, pl.Visible = nil, nil, nil, nil, nil
	if pl.Proxy {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.Release()
			return nil, fmt.Errorf("listen for the sandbox's proxy: %w", err)
		}
		pl.ProxyPort = l.Addr().(*net.TCPAddr).Port
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.wg.Go(func() { serveProxy(ctx, l, r.s.proxy, &r.refused, &connSlots{max: maxRunProxyConns}, &r.s.proxyConns) })
	}
	if err := s.runAsHelper(cmd, pl); err != nil {
		r.Release()
		return nil, err
	}
	cmd.Path = s.helperFD(cmd)
	return r, nil
}

// runLandlockOnly is the helper's life in the Landlock-only fallback: no_new_privs,
// Landlock (read and run everywhere, write only in the writable roots, the private temp
// directory and a few devices; TCP only to the proxy's port from ABI 4 on), seccomp, and
// the command.
func runLandlockOnly(pl plan) error {
	runtime.LockOSThread()
	env := os.Environ()
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") })
	env = append(env, "TMPDIR="+pl.Tmp)
	if pl.Proxy {
		env = proxyEnv(env, strconv.Itoa(pl.ProxyPort))
	}
	if err := os.Chdir(pl.Dir); err != nil {
		return fmt.Errorf("enter %s: %w", pl.Dir, err)
	}
	prog, err := exec.LookPath(pl.Argv[0])
	if err != nil {
		return fmt.Errorf("find %s: %w", pl.Argv[0], err)
	}
	if err := restrictLandlockOnly(pl); err != nil {
		return err
	}
	if err := loadSeccomp(pl); err != nil {
		return err
	}
	closeInherited()
	return syscall.Exec(prog, pl.Argv, env)
}

// restrictLandlockOnly applies the fallback's Landlock rules to the calling thread; unlike
// applyLandlock's second layer, any failure is an error: these rules are the sandbox.
func restrictLandlockOnly(pl plan) error {
	abi := LandlockABI()
	handled := handledFS(abi)
	if handled == 0 {
		return errors.New("no Landlock in this kernel")
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	if abi >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		if !pl.Bind {
			attr.Handled_access_net |= unix.LANDLOCK_ACCESS_NET_BIND_TCP
		}
	}
	if abi >= 6 {
		// No signals to processes outside the sandbox (keel among them), no abstract Unix
		// sockets created outside.
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("create the Landlock ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	write := handled &^ (llRead | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX)
	if !addRule(int(fd), "/", llRead) {
		return errors.New("allow reading / in the Landlock ruleset")
	}
	for _, w := range append(slices.Clone(devWritable), pl.Writable...) {
		addRule(int(fd), w, (llRead|write)&handled)
	}
	for _, s := range pl.Sockets {
		addRule(int(fd), s, (llRead|unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX)&handled)
	}
	if abi >= 4 && pl.Proxy {
		rule := llNetPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(pl.ProxyPort)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, llRuleNetPort, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("allow the proxy's port in the Landlock ruleset: %w", errno)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("apply Landlock: %w", errno)
	}
	return nil
}
