package porttest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeIsBelowTheEphemeralRangeAndFree: the port is one a listener can take, outside the
// range the kernel hands out for :0.
func TestFreeIsBelowTheEphemeralRangeAndFree(t *testing.T) {
	start := ephemeralStart()
	for range 20 {
		port := Free(t)
		if port < lowest || port >= start {
			t.Fatalf("Free = %d, want a port in [%d, %d)", port, lowest, start)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("listen on the free port %d: %v", port, err)
		}
		ln.Close()
	}
}
