package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkConnect10Stdio: start 10 stdio servers (the re-executed test binary) in parallel,
// connect and list, then shut them down.
func BenchmarkConnect10Stdio(b *testing.B) {
	var servers []ServerConfig
	for i := range 10 {
		servers = append(servers, stdioServer(fmt.Sprintf("s%d", i), mcptest.ModeEverything))
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for b.Loop() {
		m := New(Options{Servers: servers, Logger: quiet, ConnectTimeout: waittest.Timeout(), ShutdownGrace: waittest.Scale(time.Second)})
		m.Start(context.Background())
		for _, s := range m.Status() {
			if s.Status != StatusConnected {
				b.Fatalf("%s: %s", s.Name, s.Reason)
			}
		}
		b.StopTimer()
		m.Close()
		b.StartTimer()
	}
}

// BenchmarkEchoRoundTrip: one tools/call of echo through the manager's tool.
func BenchmarkEchoRoundTrip(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tr := range []string{"in-process", "stdio"} {
		b.Run(tr, func(b *testing.B) {
			opts := Options{Logger: quiet, ShutdownGrace: waittest.Scale(time.Second)}
			if tr == "stdio" {
				opts.Servers = []ServerConfig{stdioServer("t", mcptest.ModeEverything)}
			} else {
				opts.InProcess = map[string]*mcp.Server{"t": mcptest.New().Server}
			}
			m := New(opts)
			m.Start(context.Background())
			defer m.Close()
			echo, ok := m.Lookup("mcp__t__echo")
			if !ok {
				b.Fatal("no echo")
			}
			env := &tool.Env{Progress: func(string) {}}
			in := json.RawMessage(`{"text":"hi"}`)
			for b.Loop() {
				if res := echo.Call(context.Background(), env, in); res.IsError {
					b.Fatal(res.ResultText())
				}
			}
		})
	}
}
