package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
)

// SeatbeltProfile is p as a macOS Seatbelt profile (SBPL, the language sandbox-exec reads):
// everything denied by default; reading allowed everywhere except the masked paths (the
// unmasked ones inside them read again); writing allowed only in the writable roots, the
// temporary directories tmp names and the terminal devices, never in the always-read-only
// paths; the network only to keel's proxy on proxyPort on the loopback (0: none), the
// listed Unix sockets, and listening on the loopback with allowLocalBinding. In SBPL a later
// rule wins over an earlier one that matches too, so the exceptions come after the rules
// they narrow. It is a pure function of its arguments, so it is tested on any system.
func SeatbeltProfile(p Policy, tmp []string, proxyPort int) string {
	var b strings.Builder
	rule := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	rule("(version 1)")
	rule("(deny default)")
	rule("(allow process-exec)")
	rule("(allow process-fork)")
	rule("(allow signal (target same-sandbox))")
	rule("(allow process-info* (target same-sandbox))")
	rule("(allow sysctl-read)")
	rule("(allow mach-lookup)")
	rule("(allow ipc-posix-shm)")
	rule("(allow ipc-posix-sem)")
	rule("(allow pseudo-tty)")
	rule("(allow file-ioctl (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\"))")

	rule("(allow file-read*)")
	if len(p.Masked) > 0 {
		rule("(deny file-read* %s)", filters(p.Masked))
	}
	if len(p.Unmasked) > 0 {
		rule("(allow file-read* %s)", filters(p.Unmasked))
	}

	var writable []string
	if p.Mode == ModeWorkspaceWrite {
		writable = append(writable, p.Writable...)
	}
	writable = append(writable, tmp...)
	rule("(allow file-write-data %s)", strings.Join([]string{sbplLiteral("/dev/null"), sbplLiteral("/dev/zero"),
		sbplLiteral("/dev/tty"), `(regex #"^/dev/ttys[0-9]+$")`, `(regex #"^/dev/fd/[0-9]+$")`}, " "))
	if len(writable) > 0 {
		rule("(allow file-write* %s)", filters(writable))
	}
	if len(p.ReadOnly) > 0 {
		rule("(deny file-write* %s)", filters(p.ReadOnly))
	}
	if len(p.Masked) > 0 {
		rule("(deny file-write* %s)", filters(p.Masked)) // a masked path cannot be replaced either
	}

	rule("(deny network*)")
	if proxyPort > 0 {
		rule("(allow network-outbound (remote tcp \"localhost:%d\"))", proxyPort)
	}
	if p.Network.AllowLocalBinding {
		rule("(allow network-bind (local ip \"localhost:*\"))")
		rule("(allow network-inbound (local ip \"localhost:*\"))")
		rule("(allow network-outbound (remote ip \"localhost:*\"))")
	}
	for _, s := range p.UnixSockets {
		rule("(allow network-outbound (remote unix-socket (path-literal %s)))", sbplString(s))
	}
	return b.String()
}

// filters are the SBPL path filters of paths: each path and everything below it. Paths under
// /tmp, /var and /etc are named by their real place too (/private/…), which is where macOS
// keeps them and what Seatbelt compares.
func filters(paths []string) string {
	var out []string
	for _, p := range paths {
		p = filepath.Clean(p)
		out = append(out, sbplSubpath(p))
		for _, l := range []string{"/tmp", "/var", "/etc"} {
			if within(p, l) {
				out = append(out, sbplSubpath("/private"+p))
			}
		}
	}
	return strings.Join(out, " ")
}

func sbplSubpath(p string) string { return "(subpath " + sbplString(p) + ")" }
func sbplLiteral(p string) string { return "(literal " + sbplString(p) + ")" }

// sbplString quotes s as an SBPL string literal: backslashes and double quotes escaped.
func sbplString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
