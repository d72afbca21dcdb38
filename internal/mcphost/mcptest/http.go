package mcptest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP serves srv over streamable HTTP on 127.0.0.1 and returns its URL; it stops with t.
func HTTP(t testing.TB, srv *mcp.Server) string {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// SSE serves srv over the 2024-11-05 SSE transport on 127.0.0.1 and returns its URL.
func SSE(t testing.TB, srv *mcp.Server) string {
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}
