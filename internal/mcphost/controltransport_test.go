package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost/mcptest"
)

// controlBridge plays the driving program of a ControlTransport (the Agent SDK): it holds a
// real Go SDK server, hands it what keel sends, answers Send with the server's response, and
// passes what the server sends on its own to Deliver, writing keel's answers back. Like the
// TypeScript SDK's in-process servers it accepts a second initialize (a reconnect); the Go
// server does not, so each initialize gets a fresh server session.
func controlBridge(t *testing.T, srv *mcp.Server) *ControlTransport {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var (
		mu      sync.Mutex
		conn    mcp.Connection
		waiting = map[string]chan jsonrpc.Message{}
	)
	tr := &ControlTransport{}
	read := func(c mcp.Connection) {
		for {
			msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if resp, ok := msg.(*jsonrpc.Response); ok {
				mu.Lock()
				ch := waiting[fmt.Sprint(resp.ID.Raw())]
				mu.Unlock()
				if ch != nil {
					ch <- resp
				}
				continue
			}
			raw, _ := jsonrpc.EncodeMessage(msg)
			go func() {
				out, err := tr.Deliver(ctx, raw)
				if err != nil || out == nil {
					return
				}
				if m, err := jsonrpc.DecodeMessage(out); err == nil {
					c.Write(ctx, m)
				}
			}()
		}
	}
	fresh := func() (mcp.Connection, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		c, err := ct.Connect(ctx)
		if err != nil {
			return nil, err
		}
		go read(c)
		return c, nil
	}
	tr.Send = func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, err
		}
		req, isReq := msg.(*jsonrpc.Request)
		mu.Lock()
		if isReq && req.Method == "initialize" {
			if conn != nil {
				conn.Close()
			}
			if conn, err = fresh(); err != nil {
				mu.Unlock()
				return nil, err
			}
		}
		c := conn
		mu.Unlock()
		if !isReq || !req.ID.IsValid() {
			return json.RawMessage(`{"jsonrpc":"2.0","result":{},"id":0}`), c.Write(ctx, msg)
		}
		ch := make(chan jsonrpc.Message, 1)
		key := fmt.Sprint(req.ID.Raw())
		mu.Lock()
		waiting[key] = ch
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(waiting, key)
			mu.Unlock()
		}()
		if err := c.Write(ctx, msg); err != nil {
			return nil, err
		}
		select {
		case resp := <-ch:
			return jsonrpc.EncodeMessage(resp)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return tr
}

// TestControlTransport: a server in the driving program is a server like any other: its
// tools join the pool, calls answer, a list_changed it sends starts a new generation, and a
// reconnect works over the same transport.
func TestControlTransport(t *testing.T) {
	srv := mcptest.New()
	m := start(t, Options{Transports: map[string]mcp.Transport{"t": controlBridge(t, srv.Server)}})
	st := m.Status()
	if len(st) != 1 || st[0].Status != StatusConnected || st[0].Type != TypeSDK {
		t.Fatalf("status = %+v, want one connected sdk server", st)
	}
	if !slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__echo") {
		t.Fatalf("tools = %v", toolNames(m.Tools(t.Context())))
	}
	if res := call(t, m, "mcp__t__echo", `{"text":"over the control channel"}`); res.IsError || res.ResultText() != "over the control channel" {
		t.Errorf("echo = %+v", res)
	}
	if res := call(t, m, "mcp__t__add_tool", `{"name":"late"}`); res.IsError {
		t.Fatal(res.ResultText())
	}
	waitFor(t, m, func() bool { return slices.Contains(toolNames(m.Tools(t.Context())), "mcp__t__late") })
	if err := m.Reconnect(t.Context(), "t"); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if res := call(t, m, "mcp__t__echo", `{"text":"again"}`); res.IsError || res.ResultText() != "again" {
		t.Errorf("echo after reconnect = %+v", res)
	}
}
