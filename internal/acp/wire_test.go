package acp

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGuard: what the guard answers itself and what it passes on to the SDK's connection,
// before and after initialize.
func TestGuard(t *testing.T) {
	tests := []struct {
		name        string
		initialized bool
		in          string
		reply, pass string
	}{
		{name: "not JSON", in: `{"jsonrpc":"2.0","id":1,`, reply: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{name: "batch", in: `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, reply: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: JSON-RPC batches are not supported"}}`},
		{name: "scalar", in: `"hello"`, reply: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: not a JSON-RPC message object"}}`},
		{name: "object id", in: `{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}`, reply: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: id must be a string, a number or null"}}`},
		{name: "wrong version", in: `{"jsonrpc":"1.0","id":3,"method":"initialize"}`, reply: `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid request: not a JSON-RPC 2.0 request, notification or response (jsonrpc must be \"2.0\")"}}`},
		{name: "neither method nor result", in: `{"jsonrpc":"2.0","id":4}`, reply: `{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"Invalid request: not a JSON-RPC 2.0 request, notification or response (jsonrpc must be \"2.0\")"}}`},
		{name: "request before initialize", in: `{"jsonrpc":"2.0","id":"a","method":"session/new","params":{}}`, reply: `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid request: ACP connection must be initialized before 'session/new'"}}`},
		{name: "notification before initialize", in: `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`},
		{name: "initialize", in: ` {"jsonrpc":"2.0","id":1,"method":"initialize","params":{}} `, pass: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{name: "request after initialize", initialized: true, in: `{"jsonrpc":"2.0","id":2,"method":"session/new"}`, pass: `{"jsonrpc":"2.0","id":2,"method":"session/new"}`},
		{name: "response", in: `{"jsonrpc":"2.0","id":5,"result":{}}`, pass: `{"jsonrpc":"2.0","id":5,"result":{}}`},
		{name: "blank line", in: "   "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, passed bytes.Buffer
			g := &guard{out: &out, logger: slog.New(slog.DiscardHandler)}
			g.initialized.Store(tt.initialized)
			if err := g.copy(strings.NewReader(tt.in+"\n"), &passed); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.reply, strings.TrimSpace(out.String())); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.pass, strings.TrimSpace(passed.String())); diff != "" {
				t.Errorf("passed on mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGuardLongLine: a message past what the SDK's reader takes is answered, not passed on
// (which would end the whole connection), and the next message still gets through.
func TestGuardLongLine(t *testing.T) {
	var out, passed bytes.Buffer
	g := &guard{out: &out, logger: slog.New(slog.DiscardHandler)}
	g.initialized.Store(true)
	long := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"x":"` + strings.Repeat("a", maxLine) + `"}}`
	next := `{"jsonrpc":"2.0","id":2,"method":"session/new"}`
	if err := g.copy(io.MultiReader(strings.NewReader(long+"\n"), strings.NewReader(next+"\n")), &passed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"code":-32600`) {
		t.Errorf("no error for the long line: %q", out.String())
	}
	if got := strings.TrimSpace(passed.String()); got != next {
		t.Errorf("passed on %q, want only the next message", got)
	}
}
