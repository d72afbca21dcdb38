// Package egress is the sandbox's way out to the network: an HTTP (CONNECT and plain) and
// SOCKS5 proxy, served by keel outside the sandbox on connections the sandbox's helper hands
// over. Every destination is checked against the domain lists — deniedDomains, then
// allowedDomains (with *. wildcards and :port), then an ask or a refusal — and then against
// the addresses its name resolves to: a name that leads to loopback, a private network,
// link-local or a cloud metadata address is refused unless that address is itself listed.
// The proxy dials the address it checked, so a second lookup cannot send it elsewhere.
package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Rules decide where a sandboxed command may connect.
type Rules struct {
	// Allowed and Denied are domain patterns: "example.com", "*.example.com" (subdomains),
	// either with ":port"; an IP address is a pattern for itself.
	Allowed, Denied []string
	// Strict refuses what neither list names instead of asking.
	Strict bool
	// Ask decides a destination neither list names, when not Strict: a nil error lets it
	// through, an error refuses it and says why. answered reports that a person (or the
	// program driving keel) answered for this very destination, not a rule allowing a whole
	// tool: only such an answer lets an address literal reach an internal address. A nil Ask
	// refuses (a headless run).
	Ask func(ctx context.Context, host string, port int) (answered bool, err error)
	// Resolve looks a name up; nil uses the system's resolver. Tests give names to loopback
	// servers here.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Denial is a refused destination and the setting that would let it through.
type Denial struct {
	Host string
	Why  string
}

func (d *Denial) Error() string { return d.Host + ": " + d.Why }

// Decide checks host:port and returns the address to dial, or a *Denial.
// maxHostLen is the longest DNS name, in its text form without the final dot.
const maxHostLen = 253

func (r Rules) Decide(ctx context.Context, host string, port int) (netip.AddrPort, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	if len(host) > maxHostLen {
		// Longer is no DNS name (RFC 1035); refused before anyone is asked about it.
		return netip.AddrPort{}, &Denial{hp[:maxHostLen] + "…", "not a valid host name (longer than 253 bytes)"}
	}
	if port < 1 || port > 65535 {
		// A dial takes the port modulo 65536: 67758 would be checked as itself and reach 2222.
		return netip.AddrPort{}, &Denial{hp, "not a valid port"}
	}
	if matchAny(r.Denied, host, port) {
		return netip.AddrPort{}, &Denial{hp, "listed in sandbox.network.deniedDomains"}
	}
	answered := false // someone was asked about this destination and allowed it
	if !matchAny(r.Allowed, host, port) {
		switch {
		case r.Strict:
			return netip.AddrPort{}, &Denial{hp, "not in sandbox.network.allowedDomains, and sandbox.network.strictAllowlist refuses the rest (add it there to allow it)"}
		case r.Ask == nil:
			return netip.AddrPort{}, &Denial{hp, "not in sandbox.network.allowedDomains (add it there to allow it)"}
		}
		var err error
		if answered, err = r.Ask(ctx, host, port); err != nil {
			return netip.AddrPort{}, &Denial{hp, err.Error()}
		}
	}
	addrs, err := r.resolve(ctx, host)
	if err != nil {
		return netip.AddrPort{}, &Denial{hp, fmt.Sprintf("cannot resolve: %v", err)}
	}
	var own []netip.Addr // this machine's addresses, read once a public address needs them
	for _, a := range addrs {
		a = a.Unmap()
		// A denied address is denied whatever name leads to it.
		if matchAny(r.Denied, a.String(), port) {
			return netip.AddrPort{}, &Denial{hp, fmt.Sprintf("resolves to %s, listed in sandbox.network.deniedDomains", a)}
		}
		// An internal address is refused unless listed, so that a name cannot lead a command
		// somewhere private; an address literal someone was asked about and allowed is that
		// address itself, knowingly. A rule allowing every WebFetch is not such an answer.
		literal := answered && a.String() == host
		isInternal := internal(a)
		if !isInternal {
			if own == nil {
				own = localAddrs()
			}
			isInternal = slices.Contains(own, a)
		}
		if isInternal && !literal && !matchAny(r.Allowed, a.String(), port) {
			return netip.AddrPort{}, &Denial{hp, fmt.Sprintf("resolves to the internal address %s; list %s in sandbox.network.allowedDomains to allow it", a, a)}
		}
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, &Denial{hp, "resolves to no address"}
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)), nil
}

func (r Rules) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if r.Resolve != nil {
		return r.Resolve(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// internal reports addresses a name must not lead to unlisted: loopback, private,
// link-local (cloud metadata at 169.254.169.254 among them), unspecified, shared (CGNAT),
// and the IPv6 metadata address of AWS.
func internal(a netip.Addr) bool {
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsInterfaceLocalMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(a) || a == netip.MustParseAddr("fd00:ec2::254")
}

// localAddrs are the addresses of this machine's interfaces, which count as internal whatever
// their range: a service listening on the host's public address is as much outside the
// sandbox's reach as one on loopback. A variable for tests.
var localAddrs = func() []netip.Addr {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

func matchAny(patterns []string, host string, port int) bool {
	for _, p := range patterns {
		if match(p, host, port) {
			return true
		}
	}
	return false
}

// match reports whether pattern names host:port.
func match(pattern, host string, port int) bool {
	pattern = strings.ToLower(pattern)
	if h, p, err := net.SplitHostPort(pattern); err == nil {
		if p != strconv.Itoa(port) {
			return false
		}
		pattern = h
	}
	pattern = strings.Trim(pattern, "[]")
	// An address names itself however it is spelt: 2001:db8:0:0::1 is 2001:db8::1, and
	// ::ffff:10.0.0.1 is 10.0.0.1.
	if pa, err := netip.ParseAddr(pattern); err == nil {
		ha, err := netip.ParseAddr(strings.Trim(host, "[]"))
		return err == nil && pa.Unmap().WithZone("") == ha.Unmap().WithZone("")
	}
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return host == pattern
}
