package mcphost

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListChangedNextRequest: a server adds a tool during a call; the very next Tools() — what
// the next model request carries — includes it, without waiting for anything else. Over
// streamable HTTP it arrives on the standalone stream (a watchedConn would hide that stream
// from the SDK, so HTTP sessions are not wrapped).
func TestListChangedNextRequest(t *testing.T) {
	for _, tr := range []string{"in-process", "stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			var opts Options
			switch tr {
			case "in-process":
				opts.InProcess = map[string]*mcp.Server{"t": mcptest.New().Server}
			case "stdio":
				opts.Servers = []ServerConfig{stdioServer("t", mcptest.ModeEverything)}
			case "http":
				opts.Servers = []ServerConfig{{Name: "t", Type: TypeHTTP, URL: mcptest.HTTP(t, mcptest.New().Server)}}
			}
			m := start(t, opts)
			gen := m.Generation()
			if slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__fresh") {
				t.Fatal("fresh tool present before it was added")
			}
			if res := call(t, m, "mcp__t__add_tool", `{"name":"fresh"}`); res.IsError {
				t.Fatalf("add_tool: %s", res.ResultText())
			}
			if tr == "http" {
				// Over streamable HTTP the notification comes on the standalone SSE stream and the
				// call's response on its POST stream; nothing orders the two, so the notification
				// can only be waited for.
				waitFor(t, m, func() bool { return slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__fresh") })
			}
			if !slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__fresh") {
				t.Fatalf("the next Tools() lacks the added tool: %v", toolNames(m.Tools(t.Context())))
			}
			if m.Generation() == gen {
				t.Error("generation did not change")
			}
			if res := call(t, m, "mcp__t__fresh", `{"text":"x"}`); res.ResultText() != "fresh: x" {
				t.Errorf("fresh = %q", res.ResultText())
			}
			obs := m.Observe(t.Context())
			if len(obs) != 1 || !strings.Contains(obs[0].Text, "Added: mcp__t__fresh") {
				t.Errorf("observe = %+v, want a note about the added tool", obs)
			}
		})
	}
}

// TestRelistWaitBounded: a relist that does not finish in RelistWait leaves the previous list.
func TestRelistWaitBounded(t *testing.T) {
	srv := mcptest.New()
	release := make(chan struct{})
	m := start(t, Options{InProcess: map[string]*mcp.Server{"t": srv.Server}, RelistWait: 50 * time.Millisecond}) //keel:duration meant to pass: the relist is blocked
	srv.GateList(release)
	if res := call(t, m, "mcp__t__add_tool", `{"name":"late"}`); res.IsError {
		t.Fatal(res.ResultText())
	}
	if slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__late") {
		t.Fatal("tool appeared while its relist was blocked")
	}
	close(release)
	waitFor(t, m, func() bool { return slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__late") })
}

// waitFor waits until cond holds, re-checking whenever the manager's state changes.
func waitFor(t testing.TB, m *Manager, cond func() bool) {
	t.Helper()
	ctx := waittest.Context(t)
	for {
		m.mu.Lock()
		ch := m.changed
		m.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("condition not reached in %v", waittest.Timeout())
		}
	}
}

// TestCrash: a stdio server that exits is marked failed, its tools are gone from the very next
// Tools(), and calling one returns a clear error result.
func TestCrash(t *testing.T) {
	m := start(t, Options{Servers: []ServerConfig{stdioServer("t", mcptest.ModeEverything), stdioServer("u", mcptest.ModeEverything)}})
	echo, _ := m.Lookup("mcp__t__echo")
	res := call(t, m, "mcp__t__crash", `{}`)
	if !res.IsError || !strings.Contains(res.ResultText(), `MCP server "t" disconnected`) {
		t.Errorf("crash call = %q, want a disconnect error", res.ResultText())
	}
	names := toolNames(m.Tools(t.Context()))
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp__t__") }) {
		t.Errorf("tools of the crashed server still offered: %v", names)
	}
	if !slices.Contains(names, "mcp__u__echo") {
		t.Errorf("the other server's tools are gone too: %v", names)
	}
	res = echo.Call(t.Context(), &tool.Env{}, []byte(`{"text":"x"}`))
	if !res.IsError || !strings.Contains(res.ResultText(), `MCP server "t" is failed`) {
		t.Errorf("call to a tool of the crashed server = %q", res.ResultText())
	}
	if _, ok := m.Lookup("mcp__t__echo"); !ok {
		t.Error("Lookup of a crashed server's tool should still find it, to answer clearly")
	}
	obs := m.Observe(t.Context())
	if len(obs) != 1 || !strings.Contains(obs[0].Text, `MCP server "t" disconnected`) {
		t.Errorf("observe = %+v", obs)
	}
	// The exit reason arrives once the process is reaped.
	waitFor(t, m, func() bool { return strings.Contains(m.Status()[0].Reason, "crashing on purpose") })
	if st := m.Status()[0]; st.Status != StatusFailed || !strings.Contains(st.Reason, "exit status 3") {
		t.Errorf("status = %+v", st)
	}
	ctx := waittest.Context(t)
	// Reconnect restarts it.
	if err := m.Reconnect(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__echo") {
		t.Error("tools did not come back after Reconnect")
	}
	if obs := m.Observe(t.Context()); len(obs) != 1 || !strings.Contains(obs[0].Text, "reconnected") {
		t.Errorf("observe after reconnect = %+v", obs)
	}
}

// TestBrokenServersDoNotBlock: a server that never answers initialize times out, one that exits
// at once fails with its stderr, and the good one connects regardless.
func TestBrokenServersDoNotBlock(t *testing.T) {
	// The hanging server needs the timeout to pass and the good one to connect within it.
	timeout := waittest.Scale(3 * time.Second)
	m := start(t, Options{ConnectTimeout: timeout, Servers: []ServerConfig{
		stdioServer("good", mcptest.ModeEverything),
		stdioServer("hang", mcptest.ModeHang),
		stdioServer("exit", mcptest.ModeExit),
		{Name: "missing", Type: TypeStdio, Command: "keel-no-such-command-xyz"},
	}})
	got := map[string]ServerStatus{}
	for _, s := range m.Status() {
		got[s.Name] = s
	}
	if got["good"].Status != StatusConnected {
		t.Errorf("good = %+v", got["good"])
	}
	for name, want := range map[string]string{
		"hang":    fmt.Sprintf("no answer to initialize within %v (MCP_TIMEOUT)", timeout),
		"exit":    "missing dependency, giving up",
		"missing": "keel-no-such-command-xyz",
	} {
		if got[name].Status != StatusFailed || !strings.Contains(got[name].Reason, want) {
			t.Errorf("%s = %+v, want failed with %q", name, got[name], want)
		}
	}
}

// TestNotificationFlood: thousands of list_changed notifications are coalesced into few
// relists and the session stays usable.
func TestNotificationFlood(t *testing.T) {
	m := start(t, Options{Servers: []ServerConfig{stdioServer("f", mcptest.ModeFlood)}})
	res := call(t, m, "mcp__f__flood", `{"count":5000}`)
	if res.IsError || res.ResultText() != "sent 5000" {
		t.Fatalf("flood = %q", res.ResultText())
	}
	if names := toolNames(m.Tools(t.Context())); !slices.Equal(names, []string{"mcp__f__flood"}) {
		t.Errorf("tools = %v", names)
	}
	if gen := m.Generation(); gen > 200 {
		t.Errorf("generation %d: the flood was not coalesced", gen)
	}
	if res := call(t, m, "mcp__f__flood", `{"count":1}`); res.ResultText() != "sent 1" {
		t.Errorf("after the flood: %q", res.ResultText())
	}
}
