// Package porttest gives tests a loopback port to listen on later, when the port must be known
// before the listener exists: a configured callback port, the routes of a cluster whose nodes
// start one after another, a server restarted on the address it had.
//
// A port taken from a listener on :0 and closed is in the kernel's ephemeral range, which the
// kernel hands out again — to another test's :0 listener or outgoing connection — before the
// test binds it; under a loaded test run that happens. The ports here come from below that
// range, which the kernel never hands out by itself.
package porttest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// lowest is the lowest port Free picks.
const lowest = 10_000

// Free returns a loopback port below the ephemeral range that nothing listens on now.
func Free(t testing.TB) int {
	t.Helper()
	top := ephemeralStart()
	for range 100 {
		port := lowest + rand.IntN(top-lowest)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatalf("no free loopback port between %d and %d in 100 tries", lowest, top)
	return 0
}

// ephemeralStart is the first port of the kernel's ephemeral range, Linux's default where it
// cannot be read.
func ephemeralStart() int {
	start := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lowest+1_000 {
				start = n
			}
		}
	}
	return start
}
