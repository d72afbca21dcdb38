package session

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// stdioEntry is an .mcp.json entry running an mcptest server; tag changes the entry
// without changing the server.
func stdioEntry(t *testing.T, tag string) json.RawMessage {
	t.Helper()
	cmd, args, env := mcptest.Command(mcptest.ModeEverything)
	env["TAG"] = tag
	b, err := json.Marshal(map[string]any{"type": "stdio", "command": cmd, "args": args, "env": env})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lastTools are the tool names of the newest model request.
func lastTools(t *testing.T, h *harness) []string {
	t.Helper()
	reqs := h.srv.Requests()
	return toolNames(t, reqs[len(reqs)-1].Body)
}

// TestSetMCPServers replaces the servers the driving program manages, as mcp_set_servers
// does: its in-process server from the start belongs to the set, a --mcp-config server stays
// until a call names it, the very next request carries each change, unchanged entries are
// left alone and a bad entry is an error by name.
func TestSetMCPServers(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("ok")}}}}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := mcptest.New().Server.Connect(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]json.RawMessage{"conf": stdioEntry(t, "conf")}})
	h := newHarness(t, sc, Options{MCP: MCPOptions{Dynamic: true, ToolSearch: mcphost.SearchOff,
		Transports: map[string]mcp.Transport{"host": ct}, Configs: []string{string(cfg)}}})
	h.send(t, "first")
	if got := lastTools(t, h); !has(got, "mcp__host__echo") || !has(got, "mcp__conf__echo") {
		t.Fatalf("first request tools = %v", got)
	}

	set := func(servers map[string]json.RawMessage) (added, removed []string, errs map[string]string) {
		t.Helper()
		added, removed, errs, err := h.sess.MCP().SetServers(waittest.Context(t), servers, nil)
		if err != nil {
			t.Fatalf("SetMCPServers: %v", err)
		}
		return added, removed, errs
	}
	added, removed, errs := set(map[string]json.RawMessage{"new": stdioEntry(t, "a"), "bad": json.RawMessage(`{"type":"stdio"}`),
		"ghost": json.RawMessage(`{"type":"sdk","name":"ghost"}`)})
	if diff := cmp.Diff([]string{"new"}, added); diff != "" {
		t.Errorf("added mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"host"}, removed); diff != "" {
		t.Errorf("removed mismatch (-want +got):\n%s", diff)
	}
	if len(errs) != 2 || !strings.Contains(errs["bad"], "command") || !strings.Contains(errs["ghost"], "in-process") {
		t.Errorf("errors = %v, want bad (no command) and ghost (no such in-process server)", errs)
	}
	h.send(t, "second")
	if got := lastTools(t, h); !has(got, "mcp__new__echo") || has(got, "mcp__host__echo") || !has(got, "mcp__conf__echo") {
		t.Errorf("request after the change: tools = %v, want new and conf, not host", got)
	}
	if st := statusNamed(h, "new"); st.Scope != mcphost.ScopeDynamic || st.Status != mcphost.StatusConnected {
		t.Errorf("new: %+v, want connected, scope dynamic", st)
	}

	if added, removed, errs := set(map[string]json.RawMessage{"new": stdioEntry(t, "a")}); len(added)+len(removed)+len(errs) != 0 {
		t.Errorf("the same set again: added %v removed %v errors %v, want nothing", added, removed, errs)
	}
	before := h.sess.MCP().Status()
	// Naming a configured server replaces it; it then belongs to the set.
	added, removed, _ = set(map[string]json.RawMessage{"conf": stdioEntry(t, "b")})
	if !slices.Equal(added, []string{"conf"}) || !slices.Equal(removed, []string{"new"}) {
		t.Errorf("replacing conf: added %v removed %v, want [conf] [new]", added, removed)
	}
	if st := statusNamed(h, "conf"); st.Scope != mcphost.ScopeDynamic {
		t.Errorf("conf after it was named: %+v (before: %+v), want scope dynamic", st, before)
	}
	_, removed, _ = set(map[string]json.RawMessage{})
	if !slices.Equal(removed, []string{"conf"}) {
		t.Errorf("empty set: removed %v, want [conf]", removed)
	}
	h.send(t, "third")
	if got := lastTools(t, h); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp__") }) {
		t.Errorf("request after the empty set: tools = %v, want no MCP tools", got)
	}
	if st := h.sess.MCP().Status(); len(st) != 0 {
		t.Errorf("status after the empty set = %+v, want no servers", st)
	}
}

// TestSetMCPServersNoneAtStart: a session that starts with no server at all gets one; the
// request before it carries no MCP tools (nor the resource tools).
func TestSetMCPServersNoneAtStart(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("ok")}}}}
	h := newHarness(t, sc, Options{MCP: MCPOptions{Dynamic: true, ToolSearch: mcphost.SearchOff}})
	h.send(t, "first")
	first := lastTools(t, h)
	if slices.ContainsFunc(first, func(n string) bool { return strings.Contains(n, "Mcp") || strings.HasPrefix(n, "mcp__") }) {
		t.Fatalf("tools without servers = %v", first)
	}
	if _, _, errs, err := h.sess.MCP().SetServers(waittest.Context(t), map[string]json.RawMessage{"late": stdioEntry(t, "late")}, nil); err != nil || len(errs) > 0 {
		t.Fatalf("SetMCPServers: %v %v", err, errs)
	}
	h.send(t, "second")
	if got := lastTools(t, h); !has(got, "mcp__late__echo") {
		t.Errorf("tools after the server was added = %v", got)
	}

	plain := newHarness(t, sc, Options{})
	if _, _, _, err := plain.sess.MCP().SetServers(t.Context(), map[string]json.RawMessage{}, nil); err == nil {
		t.Error("a session opened without an MCP manager changed its servers")
	}
}

// TestToggleMCPStopsServer: switched off, a server's tools leave the next request and its
// status reads disabled; switched on, they are back.
func TestToggleMCPStopsServer(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("ok")}}}}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]json.RawMessage{"s": stdioEntry(t, "s")}})
	h := newHarness(t, sc, Options{MCP: MCPOptions{ToolSearch: mcphost.SearchOff, Configs: []string{string(cfg)}}})
	if err := h.sess.MCP().Toggle(waittest.Context(t), "s", false); err != nil {
		t.Fatal(err)
	}
	if st := statusNamed(h, "s"); st.Status != mcphost.StatusDisabled {
		t.Errorf("status while off = %+v", st)
	}
	h.send(t, "off")
	if got := lastTools(t, h); has(got, "mcp__s__echo") {
		t.Errorf("tools while off = %v", got)
	}
	if err := h.sess.MCP().Toggle(waittest.Context(t), "s", true); err != nil {
		t.Fatal(err)
	}
	h.send(t, "on")
	if got := lastTools(t, h); !has(got, "mcp__s__echo") {
		t.Errorf("tools after switching on = %v", got)
	}
	if err := h.sess.MCP().Toggle(t.Context(), "nope", false); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("toggling an unknown server = %v", err)
	}
}

func statusNamed(h *harness, name string) mcphost.ServerStatus {
	for _, st := range h.sess.MCP().Status() {
		if st.Name == name {
			return st
		}
	}
	return mcphost.ServerStatus{}
}
