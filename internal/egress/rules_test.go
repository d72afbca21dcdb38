package egress

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestDecide: deniedDomains, then allowedDomains with wildcards and ports, then ask or
// refuse; names leading to internal addresses are refused unless the address is listed.
func TestDecide(t *testing.T) {
	names := map[string]string{
		"github.com": "140.82.112.3", "api.github.com": "140.82.112.6", "evil.github.com": "140.82.112.9",
		"rebind.example": "127.0.0.1", "meta.example": "169.254.169.254", "lan.example": "10.1.2.3",
		"listed.example": "10.9.9.9", "other.example": "93.184.215.14", "rebind2.example": "127.0.0.1",
		"self.example": "192.0.2.2", "to-denied.github.com": "203.0.113.7", "v6.github.com": "2001:db8::1",
	}
	// This machine's own address, outside every private range (the tester's was in TEST-NET-1).
	saved := localAddrs
	localAddrs = func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("192.0.2.2")} }
	t.Cleanup(func() { localAddrs = saved })
	r := Rules{
		Allowed: []string{"github.com", "*.github.com", "npmjs.org:443", "rebind.example", "meta.example", "lan.example", "listed.example", "10.9.9.9"},
		Denied:  []string{"evil.github.com", "203.0.113.7", "2001:DB8:0:0::1"},
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if a, ok := names[host]; ok {
				return []netip.Addr{netip.MustParseAddr(a)}, nil
			}
			return nil, errors.New("no such host")
		},
	}
	asked := 0
	for _, tc := range []struct {
		host   string
		port   int
		ok     bool
		ask    bool
		strict bool
		// rule: the ask was answered by a rule allowing the whole tool, no one was asked.
		rule bool
	}{
		{host: "github.com", port: 443, ok: true},
		{host: "API.GitHub.com.", port: 443, ok: true},
		{host: "evil.github.com", port: 443},
		// A denied address is denied by any name that leads to it (an allowed wildcard here).
		{host: "203.0.113.7", port: 443, ask: true},
		{host: "to-denied.github.com", port: 443},
		// An address listed in any spelling is denied in every other (the adversary's L1).
		{host: "2001:db8::1", port: 443, ask: true},
		{host: "2001:0db8::0:1", port: 443, ask: true},
		{host: "v6.github.com", port: 443},
		{host: "::ffff:203.0.113.7", port: 443, ask: true},
		{host: "npmjs.org", port: 80},
		{host: "rebind.example", port: 80},
		{host: "meta.example", port: 80},
		{host: "lan.example", port: 80},
		{host: "listed.example", port: 80, ok: true},
		{host: "10.9.9.9", port: 9, ok: true},
		{host: "127.0.0.1", port: 9},
		{host: "169.254.169.254", port: 80},
		{host: "other.example", port: 443},
		{host: "other.example", port: 443, ask: true, ok: true},
		{host: "other.example", port: 443, ask: true, strict: true},
		// An internal address literal the user allowed when asked is that address, knowingly;
		// a name that leads there is not, however it was answered.
		{host: "127.0.0.1", port: 9, ask: true, ok: true},
		{host: "::1", port: 9, ask: true, ok: true},
		{host: "rebind2.example", port: 80, ask: true},
		// A rule allowing every WebFetch is not an answer about an internal address (the
		// tester's F2: a blanket allow rule let commands reach the host's loopback services).
		{host: "127.0.0.1", port: 9, rule: true},
		{host: "0.0.0.0", port: 9, rule: true},
		{host: "::1", port: 9, rule: true},
		{host: "other.example", port: 443, rule: true, ok: true},
		// The machine's own address counts as internal, by name or literal, unless asked about.
		{host: "192.0.2.2", port: 9, rule: true},
		{host: "self.example", port: 80, rule: true},
		{host: "192.0.2.2", port: 9, ask: true, ok: true},
		// A port past 65535 is no port: dialled modulo 65536, 67758 would reach 2222 unchecked
		// (the tester's F3); an allowed host does not make it one.
		{host: "github.com", port: 67758},
		{host: "github.com", port: 0},
		{host: "10.9.9.9", port: -1},
	} {
		rr := r
		rr.Strict = tc.strict
		switch {
		case tc.ask:
			rr.Ask = func(context.Context, string, int) (bool, error) { asked++; return true, nil }
		case tc.rule:
			rr.Ask = func(context.Context, string, int) (bool, error) { return false, nil }
		}
		_, err := rr.Decide(t.Context(), tc.host, tc.port)
		if (err == nil) != tc.ok {
			t.Errorf("%s:%d (ask %v, strict %v): err %v, want allowed %v", tc.host, tc.port, tc.ask, tc.strict, err, tc.ok)
		}
	}
	if asked != 5 {
		t.Errorf("asked %d times, want 5 (strictAllowlist never asks)", asked)
	}
}

// TestDecideRefusesOverlongNames: a name longer than DNS allows is refused before anyone is
// asked, and the refusal quotes no more of it than the longest name (adversary12b H2's
// 300 MB host otherwise reached the prompt and the run's list of refusals whole).
func TestDecideRefusesOverlongNames(t *testing.T) {
	r := Rules{Ask: func(context.Context, string, int) (bool, error) {
		t.Error("asked about an overlong name")
		return false, nil
	}}
	_, err := r.Decide(t.Context(), strings.Repeat("a", 10_000)+".example", 443)
	var d *Denial
	if !errors.As(err, &d) || len(d.Host) > maxHostLen+len("…") || !strings.Contains(d.Why, "not a valid host name") {
		t.Fatalf("Decide = %v", err)
	}
}
