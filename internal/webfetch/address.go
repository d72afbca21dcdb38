package webfetch

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/keel-dev/keel/internal/lazy"
)

// nonPublic are address ranges outside the public internet that netip's predicates do not
// cover: carrier-grade NAT, the IETF protocol block, benchmarking, and "this network".
var nonPublic = lazy.Value[[]netip.Prefix]{New: func() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("198.18.0.0/15"),
	}
}}

// nat64 embeds IPv4 addresses in IPv6 (RFC 6052); the embedded address decides.
var nat64 = lazy.Value[netip.Prefix]{New: func() netip.Prefix { return netip.MustParsePrefix("64:ff9b::/96") }}

// IsPrivate reports whether ip is a loopback, private, link-local, unspecified, multicast or
// otherwise non-public address: somewhere on the user's machine or network rather than the
// internet.
func IsPrivate(ip netip.Addr) bool {
	ip = ip.Unmap()
	if nat64.Get().Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range nonPublic.Get() {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// PrivateAddressError is a connection refused because it would have reached a private
// address and no permission rule names the host.
type PrivateAddressError struct {
	Host string
	IP   netip.Addr
}

func (e *PrivateAddressError) Error() string {
	if a, err := netip.ParseAddr(e.Host); err == nil && a.Unmap() == e.IP {
		return fmt.Sprintf("%s is a private, loopback or link-local address", e.Host)
	}
	return fmt.Sprintf("%s resolves to %s, a private, loopback or link-local address", e.Host, e.IP)
}

// guard returns a dialer Control function that refuses private addresses. It runs on the
// address really being connected to, after name resolution, so a name that resolves to a
// public address at check time and a private one at dial time (DNS rebinding) is still
// caught.
func guard(host string) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		h, _, err := net.SplitHostPort(address)
		if err != nil {
			return fmt.Errorf("dial %s: %w", address, err)
		}
		ip, err := netip.ParseAddr(h)
		if err != nil {
			return fmt.Errorf("dial %s: not an IP address", address)
		}
		if IsPrivate(ip) {
			return &PrivateAddressError{Host: host, IP: ip.Unmap()}
		}
		return nil
	}
}
