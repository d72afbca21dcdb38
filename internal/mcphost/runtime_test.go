package mcphost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/waittest"
)

// procOf returns the running process of the stdio server called name.
func procOf(t *testing.T, m *Manager, name string) *process {
	t.Helper()
	c := m.find(name)
	if c == nil {
		t.Fatalf("no server %s", name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.proc == nil {
		t.Fatalf("server %s has no process", name)
	}
	return c.proc
}

// assertGone checks that p has exited and that no process with its pid is left.
func assertGone(t *testing.T, p *process) {
	t.Helper()
	select {
	case <-p.done:
	default:
		t.Fatalf("process %d still running", p.cmd.Process.Pid)
	}
	if err := syscall.Kill(p.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -0 %d = %v, want ESRCH: the process is still there", p.cmd.Process.Pid, err)
	}
}

func statusOf(m *Manager, name string) ServerStatus {
	for _, st := range m.Status() {
		if st.Name == name {
			return st
		}
	}
	return ServerStatus{}
}

// TestAddRemoveNextRequest: a server added while the manager runs is in the very next
// Tools() once Add returns, in a new generation; removing it takes its tools out of the next
// Tools() at once, ends its process before Remove returns, and tells the model.
func TestAddRemoveNextRequest(t *testing.T) {
	m := start(t, Options{InProcess: map[string]*mcp.Server{"base": mcptest.New().Server}})
	gen := m.Generation()
	cfg := stdioServer("extra", mcptest.ModeEverything)
	cfg.Scope = ScopeDynamic
	if err := m.Add(waittest.Context(t), cfg, nil); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if names := toolNames(m.Tools(t.Context())); !slices.Contains(names, "mcp__extra__echo") || !slices.Contains(names, "mcp__base__echo") {
		t.Fatalf("tools after Add = %v, want both servers' echo", names)
	}
	if m.Generation() == gen {
		t.Error("Add did not start a new generation")
	}
	if st := statusOf(m, "extra"); st.Status != StatusConnected || st.Scope != ScopeDynamic {
		t.Errorf("status = %+v, want connected, scope dynamic", st)
	}
	if res := call(t, m, "mcp__extra__echo", `{"text":"hi"}`); res.IsError || res.ResultText() != "hi" {
		t.Errorf("echo = %q (error %v)", res.ResultText(), res.IsError)
	}
	if err := m.Add(t.Context(), cfg, nil); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second Add = %v, want an error saying the name exists", err)
	}

	p := procOf(t, m, "extra")
	if err := m.Remove(waittest.Context(t), "extra"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	assertGone(t, p)
	if names := toolNames(m.Tools(t.Context())); slices.Contains(names, "mcp__extra__echo") || !slices.Contains(names, "mcp__base__echo") {
		t.Errorf("tools after Remove = %v, want only base's", names)
	}
	if st := statusOf(m, "extra"); st.Name != "" {
		t.Errorf("removed server still listed: %+v", st)
	}
	if obs := m.Observe(t.Context()); len(obs) != 1 || !strings.Contains(obs[0].Text, `"extra" was removed`) {
		t.Errorf("observe = %+v, want a note that extra was removed", obs)
	}
	if err := m.Remove(t.Context(), "extra"); err == nil {
		t.Error("removing a server twice succeeded")
	}
}

// TestAddFailing: a server that cannot start is listed as failed and Add says why; one the
// policy disabled is listed and not started.
func TestAddFailing(t *testing.T) {
	m := start(t, Options{})
	err := m.Add(waittest.Context(t), stdioServer("broken", mcptest.ModeExit), nil)
	if err == nil || !strings.Contains(err.Error(), "missing dependency") {
		t.Errorf("Add = %v, want the server's stderr in the error", err)
	}
	if st := statusOf(m, "broken"); st.Status != StatusFailed {
		t.Errorf("status = %+v, want failed", st)
	}
	cfg := stdioServer("denied", mcptest.ModeEverything)
	cfg.Disabled = "denied by managed policy (deniedMcpServers)"
	if err := m.Add(t.Context(), cfg, nil); err == nil || !strings.Contains(err.Error(), "deniedMcpServers") {
		t.Errorf("Add of a denied server = %v, want the policy's reason", err)
	}
	if st := statusOf(m, "denied"); st.Status != StatusDisabled {
		t.Errorf("status = %+v, want disabled", st)
	}
	if err := m.Enable(t.Context(), "denied"); err == nil || !strings.Contains(err.Error(), "deniedMcpServers") {
		t.Errorf("Enable of a denied server = %v, want the policy's reason", err)
	}
	if err := m.Add(t.Context(), ServerConfig{Name: "nothing", Type: TypeSDK}, nil); err == nil {
		t.Error("an sdk server without a transport was added")
	}
}

// TestDisableStopsProcess: switching a stdio server off ends its process before Disable
// returns, its tools leave the next request and calling one says the server is off;
// switching it on starts a new process and the tools come back.
func TestDisableStopsProcess(t *testing.T) {
	m := start(t, Options{Servers: []ServerConfig{stdioServer("s", mcptest.ModeEverything)}})
	first := procOf(t, m, "s")
	echo, ok := m.Lookup("mcp__s__echo")
	if !ok {
		t.Fatal("no echo tool")
	}
	if err := m.Disable(waittest.Context(t), "s"); err != nil {
		t.Fatalf("Disable: %v", err)
	}
	assertGone(t, first)
	if st := statusOf(m, "s"); st.Status != StatusDisabled || st.Reason != reasonOff || st.Tools != 0 {
		t.Errorf("status = %+v, want disabled, %q, no tools", st, reasonOff)
	}
	if names := toolNames(m.Tools(t.Context())); len(names) != 0 {
		t.Errorf("tools while off = %v, want none", names)
	}
	res := echo.Call(t.Context(), nil, []byte(`{"text":"x"}`))
	if !res.IsError || !strings.Contains(res.ResultText(), "switched off") {
		t.Errorf("call while off = %q, want an error saying the server is switched off", res.ResultText())
	}
	if _, ok := m.Lookup("mcp__s__echo"); !ok {
		t.Error("Lookup lost the tool of the switched-off server, so its call would read as unknown")
	}
	if err := m.Reconnect(t.Context(), "s"); err == nil || !strings.Contains(err.Error(), "switched off") {
		t.Errorf("Reconnect while off = %v, want an error", err)
	}
	if err := m.Disable(t.Context(), "s"); err != nil {
		t.Errorf("second Disable: %v", err)
	}

	if err := m.Enable(waittest.Context(t), "s"); err != nil {
		t.Fatalf("Enable: %v", err)
	}
	second := procOf(t, m, "s")
	if second == first {
		t.Fatal("Enable did not start a new process")
	}
	if err := syscall.Kill(second.cmd.Process.Pid, 0); err != nil {
		t.Errorf("the new process is not running: %v", err)
	}
	if st := statusOf(m, "s"); st.Status != StatusConnected {
		t.Errorf("status after Enable = %+v", st)
	}
	if res := call(t, m, "mcp__s__echo", `{"text":"back"}`); res.ResultText() != "back" {
		t.Errorf("echo after Enable = %q", res.ResultText())
	}
	if err := m.Enable(t.Context(), "s"); err != nil {
		t.Errorf("Enable of a server that is on: %v", err)
	}
}

// TestRuntimeChangesRace changes the server set while other goroutines assemble requests,
// look tools up and read the status, as a turn does beside a control request (run with
// -race).
func TestRuntimeChangesRace(t *testing.T) {
	m := start(t, Options{InProcess: map[string]*mcp.Server{"a": mcptest.New().Server, "b": mcptest.New().Server}})
	ctx, cancel := context.WithCancel(waittest.Context(t))
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for ctx.Err() == nil {
				m.Tools(ctx)
				m.Status()
				m.Lookup("mcp__b__echo")
				m.Instructions()
				m.Prompts()
				m.Observe(ctx)
				m.WaitSettled(ctx)
			}
		})
	}
	for i := range 10 {
		name := fmt.Sprintf("x%d", i)
		srv := mcptest.New().Server
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		if err := m.Add(ctx, ServerConfig{Name: name, Type: TypeSDK, Scope: ScopeDynamic}, ct); err != nil {
			t.Fatalf("Add %s: %v", name, err)
		}
		if err := m.Disable(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		if err := m.Enable(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := m.Remove(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	cancel()
	readers.Wait()
	var names []string
	for _, st := range m.Status() {
		names = append(names, st.Name)
	}
	want := []string{"a", "b", "x1", "x3", "x5", "x7", "x9"}
	if !slices.Equal(names, want) {
		t.Errorf("servers = %v, want %v", names, want)
	}
}

// TestAddAfterClose: nothing starts once the manager is closed.
func TestAddAfterClose(t *testing.T) {
	m := New(Options{Logger: testLogger(t)})
	m.Start(t.Context())
	m.Close()
	if err := m.Add(t.Context(), stdioServer("late", mcptest.ModeEverything), nil); err == nil {
		t.Error("Add after Close succeeded")
	}
}
