package sandbox

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Finding is one line of `keel doctor`'s sandbox section.
type Finding struct {
	Name string
	// Status is ok, warn or fail (or info for what is only reported).
	Status, Detail string
}

// Doctor says what this machine supports for the sandbox and what s will do: user
// namespaces and the sysctls that restrict them, Landlock's ABI, seccomp, bubblewrap, and
// the result of starting a command in the sandbox; then the mode, the writable set, the
// always-read-only and masked paths and the network rule.
func Doctor(ctx context.Context, s *Sandbox) []Finding {
	// The probe tries bubblewrap first and remembers why it was not used.
	err := s.Available()
	out := []Finding{userNamespaceFinding(s), landlockFinding(), seccompFinding(), bubblewrapFinding(s), launcherFinding(s, err)}
	return append(out, policyFindings(s)...)
}

// userNamespaceFinding says whether keel's own helper can make user namespaces, with the
// kernel settings that decide it.
func userNamespaceFinding(s *Sandbox) Finding {
	userns := Finding{Name: "user namespaces", Status: "ok", Detail: "available"}
	for _, f := range []string{"/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/unprivileged_userns_clone",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns"} {
		if b, err := os.ReadFile(f); err == nil {
			userns.Detail += fmt.Sprintf("; %s = %s", strings.TrimPrefix(f, "/proc/sys/"), strings.TrimSpace(string(b)))
		}
	}
	switch {
	case !userNamespaces() && s.bwrap != "":
		// A setuid bwrap, or one AppArmor lets through, makes them all the same.
		userns.Status, userns.Detail = "warn", "disabled for keel's own helper, not for bubblewrap: "+userns.Detail
	case !userNamespaces():
		userns.Status, userns.Detail = "fail", "disabled: "+userns.Detail
	case appArmorRestrictsUserNamespaces():
		userns.Status, userns.Detail = "warn", "restricted by AppArmor to the programs its profiles allow (bubblewrap's bwrap among them): "+userns.Detail
	}
	return userns
}

func landlockFinding() Finding {
	if abi := LandlockABI(); abi > 0 {
		return Finding{Name: "Landlock", Status: "ok", Detail: fmt.Sprintf("ABI %d (used as a second layer, best effort)", abi)}
	}
	return Finding{Name: "Landlock", Status: "warn", Detail: "not available (the mounts still confine writes)"}
}

func bubblewrapFinding(s *Sandbox) Finding {
	bw := Finding{Name: "bubblewrap", Status: "info", Detail: "not used (the sandbox uses it on Linux only)"}
	switch {
	case s.bwrap != "":
		bw.Detail = fmt.Sprintf("%s at %s: used (installed and recent enough)", s.bwrapVersion, s.bwrap)
	case s.bwrapWhy != "":
		bw.Detail = "not used: " + s.bwrapWhy
	}
	return bw
}

// launcherFinding names what runs the commands — bubblewrap, keel's own helper, the
// Landlock-only form — or why nothing can (err, from the probe).
func launcherFinding(s *Sandbox, err error) Finding {
	const confinement = "Landlock, seccomp, no_new_privs"
	use := Finding{Name: "keel uses", Status: "ok"}
	switch {
	case err != nil:
		use.Status, use.Detail = "fail", err.Error()
	case s.bwrap != "":
		use.Detail = fmt.Sprintf("%s (%s) for the user, mount, PID, network and IPC namespaces, then its own helper (%s) inside for %s; bubblewrap is preferred to keel's own namespace set-up whenever it is installed and recent enough",
			s.bwrapVersion, s.bwrap, s.exe, confinement)
	case s.limited != "":
		use.Status, use.Detail = "warn", "its own helper ("+s.exe+"), "+s.limited+"; seccomp and no_new_privs; bubblewrap not used: "+s.bwrapWhy
	default:
		use.Detail = "its own helper (" + s.exe + "): user, mount, PID, network and IPC namespaces, " + confinement
		if s.bwrapWhy != "" {
			use.Detail += "; bubblewrap not used: " + s.bwrapWhy
		}
	}
	return use
}

// policyFindings are what the session's sandbox allows: its mode, the writable, read-only
// and masked paths, and the network.
func policyFindings(s *Sandbox) []Finding {
	p := s.complete()
	mode := Finding{Name: "mode", Status: "info", Detail: string(p.Mode)}
	if !p.Enabled() {
		mode.Detail = "off: Bash runs without the sandbox (turn it on with sandbox.enabled or --sandbox workspace-write)"
	}
	writable := pathsFinding("writable", p.Writable, "nothing")
	writable.Detail += "; and a private /tmp for each command"
	out := []Finding{mode, writable}
	if c, ok := cachesFinding(s, p); ok {
		out = append(out, c)
	}
	out = append(out, pathsFinding("always read-only", p.ReadOnly, "none"),
		pathsFinding("masked", p.Masked, "none"), networkFinding(s))
	out = append(out, hostFindings(s, p)...)
	if len(p.UnixSockets) > 0 {
		out = append(out, unixSocketsFinding(p.UnixSockets, LandlockABI()))
	}
	for _, w := range p.Warnings {
		out = append(out, Finding{Name: "protection", Status: "warn", Detail: w})
	}
	for _, pr := range p.Problems {
		out = append(out, Finding{Name: "masks", Status: "fail", Detail: pr + " (every command is refused until then)"})
	}
	return out
}

// pathsFinding lists the paths that exist now. Absent paths are counted, not listed: a dozen
// start-up files a user does not have would hide the few that matter.
func pathsFinding(name string, paths []string, none string) Finding {
	var present []string
	absent := 0
	for _, path := range paths {
		if _, err := os.Lstat(path); err != nil {
			absent++
			continue
		}
		present = append(present, path)
	}
	detail := strings.Join(present, ", ")
	switch {
	case absent > 0 && detail == "":
		detail = fmt.Sprintf("%d paths, none present now (they apply once they exist)", absent)
	case absent > 0:
		detail += fmt.Sprintf("; and %d paths not present now (they apply once they exist)", absent)
	case detail == "":
		detail = none
	}
	return Finding{Name: name, Status: "info", Detail: detail}
}

func networkFinding(s *Sandbox) Finding {
	p := s.policy
	net := "no network device but loopback; out only through keel's proxy"
	if s.landlockOnly {
		net = "the host's network (Landlock only: see above); keel's proxy"
	}
	if len(p.Network.AllowedDomains) > 0 {
		net += ", allowed: " + strings.Join(p.Network.AllowedDomains, ", ")
	} else {
		net += ", which lists no domain (sandbox.network.allowedDomains)"
	}
	if p.Network.Strict {
		net += "; any other is refused (strictAllowlist)"
	} else {
		net += "; any other is asked about (refused in a headless run)"
	}
	if len(p.Network.DeniedDomains) > 0 {
		net += "; denied: " + strings.Join(p.Network.DeniedDomains, ", ")
	}
	return Finding{Name: "network", Status: "info", Detail: net}
}

// unixSocketsFinding says which Unix sockets a command may reach with allowUnixSockets set:
// seccomp then lets it make Unix sockets, and only Landlock (ABI 9 and later) limits which
// paths it may connect to — a read-only mount does not keep a connection from a socket.
func unixSocketsFinding(sockets []string, abi int) Finding {
	if abi >= 9 {
		return Finding{Name: "unix sockets", Status: "info", Detail: "only " + strings.Join(sockets, ", ") + " (sandbox.network.allowUnixSockets, held by Landlock)"}
	}
	return Finding{Name: "unix sockets", Status: "warn", Detail: fmt.Sprintf(
		"sandbox.network.allowUnixSockets lists %s, but Landlock ABI %d here cannot hold a command to them (that needs ABI 9): it may connect to any Unix socket whose path it can reach",
		strings.Join(sockets, ", "), abi)}
}

// seccompFinding reads whether the kernel has seccomp filters, from this process's status.
func seccompFinding() Finding {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil || !strings.Contains(string(b), "Seccomp:") {
		return Finding{Name: "seccomp", Status: "warn", Detail: "not reported by the kernel"}
	}
	return Finding{Name: "seccomp", Status: "ok", Detail: "filters available (io_uring, ptrace, process_vm_*, mounts, namespaces, AF_VSOCK, TIOCSTI and new Unix sockets refused)"}
}

// appArmorRestrictsUserNamespaces reports whether AppArmor allows unprivileged user
// namespaces only to the programs its profiles name (Ubuntu 24.04 and later).
func appArmorRestrictsUserNamespaces() bool {
	b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
	return err == nil && strings.TrimSpace(string(b)) == "1" && os.Getuid() != 0
}

// userNamespaces reports whether this kernel lets this user create user namespaces, as far
// as the sysctls tell.
func userNamespaces() bool {
	for file, bad := range map[string]string{"/proc/sys/user/max_user_namespaces": "0", "/proc/sys/kernel/unprivileged_userns_clone": "0"} {
		if b, err := os.ReadFile(file); err == nil && strings.TrimSpace(string(b)) == bad && (os.Getuid() != 0 || strings.Contains(file, "max_user")) {
			return false
		}
	}
	return true
}
