package mcphost

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func inProcess(t *testing.T, opts Options) (*Manager, *mcptest.Server) {
	srv := mcptest.New()
	opts.InProcess = map[string]*mcp.Server{"t": srv.Server}
	return start(t, opts), srv
}

func TestCallResults(t *testing.T) {
	m, _ := inProcess(t, Options{MaxOutputTokens: 1000})
	res := call(t, m, "mcp__t__content", `{}`)
	want := []message.Block{
		message.Text("hello"),
		{Type: message.TypeImage, Source: &message.ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBORw=="}},
		message.Text("[resource test://doc]\nembedded text"),
		message.Text("[resource link: test://link (link): a link]"),
	}
	if diff := cmp.Diff(want, res.Content); diff != "" {
		t.Errorf("content mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"ok": true}, res.Output); diff != "" {
		t.Errorf("structured mismatch (-want +got):\n%s", diff)
	}
	if len(res.Effects) != 1 {
		t.Errorf("effects = %v, want the remote call noted", res.Effects)
	}
	if res := call(t, m, "mcp__t__structured", `{}`); res.ResultText() != `{"answer":42}` {
		t.Errorf("structured only = %q", res.ResultText())
	}
	if res := call(t, m, "mcp__t__fail", `{}`); !res.IsError || res.ResultText() != "it went wrong" {
		t.Errorf("fail = %+v", res)
	}
	// 10 MB is capped at MaxOutputTokens (×4 characters) with a note.
	res = call(t, m, "mcp__t__huge", `{"bytes":10000000}`)
	text := res.ResultText()
	if len(text) > 4000+400 || !strings.Contains(text, "[output truncated: the tool returned about 2500000 tokens (10000000 characters); only the first 1000 tokens are shown (MAX_MCP_OUTPUT_TOKENS=1000)") {
		t.Errorf("huge: %d chars, ends %q", len(text), text[max(0, len(text)-300):])
	}
	if ro, _ := m.Lookup("mcp__t__echo"); !ro.ReadOnly(nil) || !ro.ConcurrencySafe(nil) {
		t.Error("echo has readOnlyHint and should be read-only and concurrency-safe")
	}
	if w, _ := m.Lookup("mcp__t__add_tool"); w.ReadOnly(nil) || w.ConcurrencySafe(nil) {
		t.Error("add_tool has no readOnlyHint")
	}
	if s, tl := mustRaw(t, m, "mcp__t__echo"); s != "t" || tl != "echo" {
		t.Errorf("raw = %s %s", s, tl)
	}
}

func mustRaw(t *testing.T, m *Manager, name string) (string, string) {
	tl, _ := m.Lookup(name)
	r, ok := tl.(RawNamer)
	if !ok {
		t.Fatal("MCP tool does not implement RawNamer")
	}
	return r.Raw()
}

func TestProgressCancelTimeout(t *testing.T) {
	// No timeout until the part that tests it: on a loaded machine even a quick call can take
	// longer than the short one used there.
	m, srv := inProcess(t, Options{})
	slow, _ := m.Lookup("mcp__t__slow")
	var mu sync.Mutex
	var notes []string
	env := &tool.Env{Progress: func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() }}
	if res := slow.Call(t.Context(), env, json.RawMessage(`{"steps":3}`)); res.ResultText() != "done after 3 steps" {
		t.Fatalf("slow = %q", res.ResultText())
	}
	// Progress notifications may trail the result by a scheduling step; they are delivered
	// while the call is registered, so at least the order of those seen must be right.
	mu.Lock()
	for i, n := range notes {
		if !strings.HasPrefix(n, "step (") {
			t.Errorf("progress %d = %q", i, n)
		}
	}
	mu.Unlock()

	ctx, cancel := context.WithCancelCause(t.Context())
	started := make(chan struct{})
	var once sync.Once
	startEnv := &tool.Env{Progress: func(string) { once.Do(func() { close(started) }) }}
	done := make(chan tool.Result)
	m.opts.ToolTimeout = time.Hour
	go func() { done <- slow.Call(ctx, startEnv, json.RawMessage(`{"steps":1,"wait":true,"id":"c1"}`)) }()
	waittest.Recv(t, "the server to be inside the call", started)
	cancel(context.Canceled)
	res := waittest.Recv(t, "the cancelled call to return", done)
	if !res.IsError || !strings.Contains(res.ResultText(), "interrupted") {
		t.Errorf("cancelled call = %q", res.ResultText())
	}
	if id := waittest.Recv(t, "the server to see notifications/cancelled", srv.Cancelled); id != "c1" {
		t.Errorf("cancelled id = %q", id)
	}
	// A call that never ends: the timeout ends it, however loaded the machine.
	m.opts.ToolTimeout = 300 * time.Millisecond //keel:duration meant to pass: the call never ends
	res = slow.Call(t.Context(), env, json.RawMessage(`{"steps":0,"wait":true,"id":"t1"}`))
	if !res.IsError || !strings.Contains(res.ResultText(), "timed out after 300ms (MCP_TOOL_TIMEOUT)") {
		t.Errorf("timed out call = %q", res.ResultText())
	}
	if id := waittest.Recv(t, "the server to see the timed-out call cancelled", srv.Cancelled); id != "t1" {
		t.Errorf("timeout cancelled id = %q", id)
	}
}

func TestElicitationAndRoots(t *testing.T) {
	root := t.TempDir()
	m, _ := inProcess(t, Options{Roots: []string{root}})
	// Nobody can answer: the capability is not advertised, so the server does not ask.
	if res := call(t, m, "mcp__t__ask_defaults", `{}`); res.ResultText() != "no elicitation capability" {
		t.Errorf("ask without an answerer = %q, want the capability not advertised", res.ResultText())
	}
	res := call(t, m, "mcp__t__roots", `{}`)
	if !strings.HasPrefix(res.ResultText(), "file://") || !strings.HasSuffix(res.ResultText(), filepath.ToSlash(root)) {
		t.Errorf("roots = %q", res.ResultText())
	}
	var asked []string
	m2, _ := inProcess(t, Options{Elicit: func(_ context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked = append(asked, server+": "+p.Message)
		if p.Message == "What is your name?" {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	if res := call(t, m2, "mcp__t__ask", `{}`); res.ResultText() != `accept {"name":"Ada"}` {
		t.Errorf("ask with an answer = %q", res.ResultText())
	}
	// Accepted without content: every field gets its default (SEP-1034).
	want := `accept {"age":30,"name":"John Doe","status":"active","verified":true}`
	if res := call(t, m2, "mcp__t__ask_defaults", `{}`); res.ResultText() != want {
		t.Errorf("ask_defaults accepted empty = %q, want %q", res.ResultText(), want)
	}
	if d := cmp.Diff([]string{"t: What is your name?", "t: Confirm your details"}, asked); d != "" {
		t.Errorf("questions mismatch (-want +got):\n%s", d)
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	m, _ := inProcess(t, Options{})
	tools := m.ResourceTools()
	res := tools[0].Call(t.Context(), &tool.Env{}, json.RawMessage(`{}`))
	if !strings.Contains(res.ResultText(), `"uri": "test://hello"`) {
		t.Errorf("list = %q", res.ResultText())
	}
	res = tools[1].Call(t.Context(), &tool.Env{}, json.RawMessage(`{"server":"t","uri":"test://hello"}`))
	if res.ResultText() != "[resource test://hello]\nhello, resource" {
		t.Errorf("read = %q", res.ResultText())
	}
	if res := tools[1].Call(t.Context(), &tool.Env{}, json.RawMessage(`{"server":"nope","uri":"x"}`)); !res.IsError {
		t.Error("read from an unknown server should fail")
	}
	ps := m.Prompts()
	if len(ps) != 1 || ps[0].Command != "mcp__t__greet" {
		t.Fatalf("prompts = %+v", ps)
	}
	msgs, err := m.GetPrompt(t.Context(), "t", "greet", map[string]string{"name": "Ada"})
	if err != nil || len(msgs) != 1 || msgs[0].TextOf() != "Say hello to Ada" {
		t.Errorf("prompt = %+v, %v", msgs, err)
	}
}

// TestToolsGolden fixes the MCP part of a request's tools: every current tool sorted by its
// qualified name (the session puts them after the built-ins), and when they are deferred.
func TestToolsGolden(t *testing.T) {
	m, _ := inProcess(t, Options{})
	var got strings.Builder
	for _, tl := range m.Tools(t.Context()) {
		got.WriteString(tl.Name() + "\n")
	}
	for _, tl := range m.ResourceTools() {
		fmt.Fprintf(&got, "%s deferred=%v\n", tl.Name(), tool.IsDeferred(tl))
	}
	golden := filepath.Join("testdata", "tools.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, []byte(got.String()), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
	if m.Deferring(t.Context()) {
		t.Error("auto mode deferred a handful of small tools")
	}
	if ms, _ := inProcess(t, Options{ToolSearch: ToolSearchOptions{Mode: SearchOn}}); !ms.Deferring(t.Context()) {
		t.Error("mode on does not defer")
	}
	if ms, _ := inProcess(t, Options{ToolSearch: ToolSearchOptions{Mode: SearchAuto, ContextWindow: 1000}}); !ms.Deferring(t.Context()) {
		t.Error("auto mode does not defer schemas past a tenth of a small context window")
	}
}

func TestNames(t *testing.T) {
	tests := []struct{ name, server, tool string }{
		{"mcp__my__server__tool", "my", "server__tool"},
		{"mcp__a__b", "a", "b"},
	}
	for _, tt := range tests {
		s, tl, ok := ParseName(tt.name)
		if !ok || s != tt.server || tl != tt.tool {
			t.Errorf("ParseName(%q) = %q %q %v", tt.name, s, tl, ok)
		}
	}
	for _, bad := range []string{"Read", "mcp__", "mcp__x", "mcp____y"} {
		if _, _, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) ok", bad)
		}
	}
	if got := QualifiedName("my.server", "do thing/now"); got != "mcp__my_server__do_thing_now" {
		t.Errorf("QualifiedName = %q", got)
	}
}

// TestCollision: two servers whose names normalise alike are reported, not merged.
func TestCollision(t *testing.T) {
	m := start(t, Options{InProcess: map[string]*mcp.Server{"a.b": mcptest.New().Server, "a_b": mcptest.New().Server}})
	col := m.Collisions()
	if len(col) == 0 || !strings.Contains(col[0], `collides with tool "add_tool" of server "a.b"`) {
		t.Errorf("collisions = %q", col)
	}
	tl, _ := m.Lookup("mcp__a_b__echo")
	if s, _ := tl.(RawNamer).Raw(); s != "a.b" {
		t.Errorf("collision kept server %q, want the first by name, a.b", s)
	}
}

// TestHungServerIsMarkedUnhealthy: a call to a server that stopped answering times out, the
// ping after it fails, and the server is marked unhealthy: the model is told not to retry,
// the server's tools leave the next generation, and its status says why.
func TestHungServerIsMarkedUnhealthy(t *testing.T) {
	//keel:duration meant to pass: the server is hung
	m, srv := inProcess(t, Options{ToolTimeout: 200 * time.Millisecond, PingTimeout: 200 * time.Millisecond})
	slow, _ := m.Lookup("mcp__t__slow")
	srv.Freeze()
	res := slow.Call(t.Context(), &tool.Env{}, json.RawMessage(`{"steps":0,"wait":true,"id":"h1"}`))
	if !res.IsError || !strings.Contains(res.ResultText(), "does not answer pings either; keel marked it unhealthy") {
		t.Fatalf("result of the hung call = %q", res.ResultText())
	}
	var st ServerStatus
	for _, s := range m.Status() {
		if s.Name == "t" {
			st = s
		}
	}
	if st.Status != StatusFailed || !strings.Contains(st.Reason, "unhealthy") {
		t.Errorf("status after the failed ping = %+v", st)
	}
	for _, tl := range m.Tools(t.Context()) {
		if tl.Name() == "mcp__t__echo" {
			t.Error("the unhealthy server's tools are still offered")
		}
	}
	if res := slow.Call(t.Context(), &tool.Env{}, json.RawMessage(`{"steps":0}`)); !res.IsError || !strings.Contains(res.ResultText(), "unhealthy") {
		t.Errorf("a later call = %q, want the unhealthy status", res.ResultText())
	}
}

// TestDefaultToolTimeout: a call without MCP_TOOL_TIMEOUT is still bounded.
func TestDefaultToolTimeout(t *testing.T) {
	m := New(Options{})
	if m.opts.ToolTimeout != DefaultToolTimeout || DefaultToolTimeout > 10*time.Minute {
		t.Errorf("tool timeout %v", m.opts.ToolTimeout)
	}
}
