package mcphost

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	os.Exit(m.Run())
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// stdioServer returns a config running an mcptest mode as a child process.
func stdioServer(name, mode string) ServerConfig {
	cmd, args, env := mcptest.Command(mode)
	return ServerConfig{Name: name, Type: TypeStdio, Command: cmd, Args: args, Env: env, Scope: ScopeUser}
}

func start(t testing.TB, opts Options) *Manager {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = waittest.Scale(20 * time.Second)
	}
	opts.ShutdownGrace = waittest.Scale(500 * time.Millisecond)
	m := New(opts)
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Scale(60*time.Second))
	defer cancel()
	m.Start(ctx)
	// Start does not wait for a sign-in in the browser; the tests' browsers answer at once.
	m.WaitSettled(ctx)
	t.Cleanup(func() { m.Close() })
	return m
}

func toolNames(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

func call(t testing.TB, m *Manager, name, input string) tool.Result {
	t.Helper()
	tl, ok := m.Lookup(name)
	if !ok {
		t.Fatalf("no tool %s; have %v", name, toolNames(m.Tools(context.Background())))
	}
	return tl.Call(context.Background(), &tool.Env{Progress: func(string) {}, Logger: testLogger(t)}, json.RawMessage(input))
}

var everythingTools = []string{
	"mcp__t__add_tool", "mcp__t__ask", "mcp__t__ask_defaults", "mcp__t__content", "mcp__t__crash", "mcp__t__echo", "mcp__t__fail",
	"mcp__t__huge", "mcp__t__roots", "mcp__t__slow", "mcp__t__structured",
}

func TestConnectTransports(t *testing.T) {
	tests := []struct {
		name string
		opts func(t *testing.T) Options
	}{
		{"in-process", func(t *testing.T) Options {
			return Options{InProcess: map[string]*mcp.Server{"t": mcptest.New().Server}}
		}},
		{"stdio", func(t *testing.T) Options {
			return Options{Servers: []ServerConfig{stdioServer("t", mcptest.ModeEverything)}}
		}},
		{"http", func(t *testing.T) Options {
			return Options{Servers: []ServerConfig{{Name: "t", Type: TypeHTTP, URL: mcptest.HTTP(t, mcptest.New().Server)}}}
		}},
		{"sse", func(t *testing.T) Options {
			return Options{Servers: []ServerConfig{{Name: "t", Type: TypeSSE, URL: mcptest.SSE(t, mcptest.New().Server)}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := start(t, tt.opts(t))
			st := m.Status()
			if len(st) != 1 || st[0].Status != StatusConnected {
				t.Fatalf("status = %+v, want connected", st)
			}
			if diff := cmp.Diff(everythingTools, toolNames(m.Tools(t.Context()))); diff != "" {
				t.Errorf("tools mismatch (-want +got):\n%s", diff)
			}
			if len(st[0].Warnings) != 1 || !strings.Contains(st[0].Warnings[0], `"bad_schema" has an invalid input schema`) {
				t.Errorf("warnings = %q, want the bad_schema tool skipped", st[0].Warnings)
			}
			res := call(t, m, "mcp__t__echo", `{"text":"hi"}`)
			if res.IsError || res.ResultText() != "hi" {
				t.Errorf("echo = %+v", res)
			}
			if diff := cmp.Diff([]Instructions{{Server: "t", Text: mcptest.Instructions}}, m.Instructions()); diff != "" {
				t.Errorf("instructions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
