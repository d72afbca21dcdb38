package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ControlTransport reaches an MCP server that lives in the program driving keel (an Agent
// SDK's in-process server, created with createSdkMcpServer) through that program's own
// channel: each JSON-RPC message keel sends goes out with Send, and what the server sends
// on its own arrives through [ControlTransport.Deliver]. Its tools join the pool as
// mcp__NAME__TOOL like any server's.
//
// A ControlTransport outlives its connections: every (re)connect of the server gets a new one,
// and Deliver routes to the newest.
type ControlTransport struct {
	// Send delivers msg to the server and returns its answer: the response to a request, or
	// anything (ignored) for a notification or a response keel sends.
	Send func(ctx context.Context, msg json.RawMessage) (json.RawMessage, error)

	// mu guards conn.
	mu   sync.Mutex
	conn *controlConn
}

var _ mcp.Transport = (*ControlTransport)(nil)

// Connect starts a new connection; the previous one, if any, is closed.
func (t *ControlTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Send == nil {
		return nil, errors.New("control transport: no Send function")
	}
	c := &controlConn{t: t, in: make(chan jsonrpc.Message, 64), done: make(chan struct{}), waiting: map[string]chan *jsonrpc.Response{}}
	t.mu.Lock()
	old := t.conn
	t.conn = c
	t.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return c, nil
}

// Deliver hands keel a message the server sent on its own. A request (roots/list,
// elicitation/create…) waits for keel's response and returns it; a notification returns nil.
func (t *ControlTransport) Deliver(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return nil, errors.New("the MCP server is not connected")
	}
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return nil, fmt.Errorf("decode MCP message: %w", err)
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || !req.ID.IsValid() {
		return nil, c.push(ctx, msg)
	}
	ch := make(chan *jsonrpc.Response, 1)
	key := idKey(req.ID)
	c.mu.Lock()
	c.waiting[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, key)
		c.mu.Unlock()
	}()
	if err := c.push(ctx, msg); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		return jsonrpc.EncodeMessage(resp)
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// controlConn is one connection over a ControlTransport.
type controlConn struct {
	t    *ControlTransport
	in   chan jsonrpc.Message
	done chan struct{}
	once sync.Once

	// mu guards waiting: server requests that wait for keel's response, by id.
	mu      sync.Mutex
	waiting map[string]chan *jsonrpc.Response
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%v", id.Raw()) }

func (c *controlConn) push(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case c.in <- msg:
		return nil
	case <-c.done:
		return io.EOF
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (c *controlConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Write sends msg. A request's response is read back from Send's answer, in its own
// goroutine, so calls run concurrently; a response to a server's request completes Deliver.
func (c *controlConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.done:
		return io.EOF
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode MCP message: %w", err)
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		ch := c.waiting[idKey(m.ID)]
		c.mu.Unlock()
		if ch != nil {
			ch <- m
			return nil
		}
		_, err := c.t.Send(ctx, data)
		return err
	case *jsonrpc.Request:
		if !m.ID.IsValid() {
			_, err := c.t.Send(ctx, data)
			return err
		}
		// The exchange ends with its answer or when the connection closes.
		go c.call(m, data)
		return nil
	}
	return fmt.Errorf("control transport: cannot send a %T", msg)
}

// call sends one request and queues the server's response for Read. A failed exchange is
// answered with a JSON-RPC error, so the caller sees it instead of waiting forever.
func (c *controlConn) call(req *jsonrpc.Request, data []byte) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var resp jsonrpc.Message
	out, err := c.t.Send(ctx, data)
	if err == nil {
		resp, err = jsonrpc.DecodeMessage(out)
		if r, ok := resp.(*jsonrpc.Response); err == nil && (!ok || r.ID != req.ID) {
			err = fmt.Errorf("the server's answer to %s is not its response", req.Method)
		}
	}
	if err != nil {
		resp = &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
	}
	select {
	case c.in <- resp:
	case <-c.done:
	}
}

func (c *controlConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.t.mu.Lock()
		if c.t.conn == c {
			c.t.conn = nil
		}
		c.t.mu.Unlock()
	})
	return nil
}

func (c *controlConn) SessionID() string { return "" }
