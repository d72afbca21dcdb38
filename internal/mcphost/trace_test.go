package mcphost

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/tool"
)

// TestTraceContextReachesServers: a stdio server starts under the TRACEPARENT Options give
// (replacing one keel inherited), and each call carries its own span's traceparent in _meta.
func TestTraceContextReachesServers(t *testing.T) {
	const started = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const call = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
	m := start(t, Options{Servers: []ServerConfig{stdioServer("tr", mcptest.ModeTrace)},
		Environ:     []string{"TRACEPARENT=00-inherited"},
		Traceparent: func() string { return started }})
	tl, ok := m.Lookup("mcp__tr__trace")
	if !ok {
		t.Fatalf("no trace tool; status %+v", m.Status())
	}
	res := tl.Call(context.Background(), &tool.Env{Traceparent: call, Logger: testLogger(t)}, json.RawMessage(`{}`))
	if got, want := res.ResultText(), "env="+started+" meta="+call; got != want {
		t.Errorf("the server saw %q, want %q", got, want)
	}
	res = tl.Call(context.Background(), &tool.Env{Logger: testLogger(t)}, json.RawMessage(`{}`))
	if got, want := res.ResultText(), "env="+started+" meta="; got != want {
		t.Errorf("without a call span the server saw %q, want %q", got, want)
	}
}

// Without Options.Traceparent the server's environment is keel's, as before.
func TestNoTraceparentLeavesEnvironment(t *testing.T) {
	m := start(t, Options{Servers: []ServerConfig{stdioServer("tr", mcptest.ModeTrace)}, Environ: []string{"TRACEPARENT=00-inherited"}})
	tl, ok := m.Lookup("mcp__tr__trace")
	if !ok {
		t.Fatalf("no trace tool; status %+v", m.Status())
	}
	if got := tl.Call(context.Background(), &tool.Env{Logger: testLogger(t)}, json.RawMessage(`{}`)).ResultText(); got != "env=00-inherited meta=" {
		t.Errorf("the server saw %q", got)
	}
}
