package mcphost

import (
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
)

// serveHTTP serves srv over streamable HTTP on addr ("127.0.0.1:0" picks a port) until the
// returned server is closed.
func serveHTTP(t *testing.T, addr string, srv *mcp.Server) (*http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	return hs, ln.Addr().String()
}

// TestHTTPServerReconnectsWithBackoff stops an HTTP server, restarts it on the same port, and
// checks the manager notices the loss (tools gone), reconnects by itself and offers the tools
// again.
func TestHTTPServerReconnectsWithBackoff(t *testing.T) {
	srv := mcptest.New()
	hs, addr := serveHTTP(t, "127.0.0.1:0", srv.Server)
	m := New(Options{Servers: []ServerConfig{{Name: "h", Type: TypeHTTP, URL: "http://" + addr, Scope: ScopeUser}},
		Logger: testLogger(t), Reconnect: Backoff{Base: 5 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 200}})
	m.Start(t.Context())
	t.Cleanup(func() { m.Close() })

	status := func() ServerStatus { return m.Status()[0] }
	hasEcho := func() bool {
		_, ok := m.Lookup("mcp__h__echo")
		return ok && status().Status == StatusConnected
	}
	waitFor(t, m, hasEcho)
	gen := m.Generation()

	if err := hs.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, func() bool { return status().Status != StatusConnected })
	if got := len(m.Tools(t.Context())); got != 0 {
		t.Errorf("%d tools offered while the server is down, want 0", got)
	}

	serveHTTP(t, addr, srv.Server)
	waitFor(t, m, hasEcho)
	if m.Generation() <= gen {
		t.Errorf("generation %d after the reconnect, want more than %d", m.Generation(), gen)
	}
	var names []string
	for _, tl := range m.Tools(t.Context()) {
		names = append(names, tl.Name())
	}
	if !slices.Contains(names, "mcp__h__echo") {
		t.Errorf("tools after the reconnect = %v, want mcp__h__echo back", names)
	}
}
