package mcphost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Changes to the server set while the manager runs: servers added and removed (the Agent
// SDK's mcp_set_servers), switched off and on (mcp_toggle). Each change is a new generation,
// so the next request assembled sees it; a server's goroutine (and its process) is stopped
// before the call that stopped it returns.

// reasonOff is the status reason of a server switched off with Disable.
const reasonOff = "switched off for this session"

// launchLocked starts the goroutine that runs c, unless one runs or the manager is closed;
// m.mu must be held.
func (m *Manager) launchLocked(c *conn) {
	if m.closed || c.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(m.base)
	done := make(chan struct{})
	c.cancel, c.done = cancel, done
	select {
	case <-c.reconnect: // a request for the previous goroutine
	default:
	}
	m.wg.Go(func() {
		defer close(done)
		c.run(ctx)
	})
}

// halt stops c's goroutine, which closes its session and ends its process, and waits for it
// (or for ctx). m.ops must be held.
func (m *Manager) halt(ctx context.Context, c *conn) error {
	m.mu.Lock()
	cancel, done := c.cancel, c.done
	c.cancel = nil
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("stop MCP server %s: %w", c.cfg.Name, context.Cause(ctx))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c.session, c.proc = nil, nil
	c.tools, c.prompts, c.resources = nil, nil, nil
	c.instructions = ""
	c.status, c.reason = StatusDisabled, reasonOff
	m.bump()
	return nil
}

// Add connects a server the manager did not start with: its tools join the generation that
// follows its connection. It waits as Start does — until the server has connected, failed
// or waits for the user to sign in, or ctx ends — and returns why the server is not
// connected; it stays listed either way (Reconnect tries again). tr is the transport of a
// TypeSDK server reached through the driving program. A name in use is an error: Remove
// that server first.
func (m *Manager) Add(ctx context.Context, cfg ServerConfig, tr mcp.Transport) error {
	if cfg.Type == TypeSDK && tr == nil && m.opts.InProcess[cfg.Name] == nil {
		return fmt.Errorf("add %s: an sdk server needs a transport", cfg.Name)
	}
	m.ops.Lock()
	defer m.ops.Unlock()
	c := newConn(m, cfg)
	c.tr = tr
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("add %s: the MCP manager is closed", cfg.Name)
	}
	if slices.ContainsFunc(m.conns, func(o *conn) bool { return o.cfg.Name == cfg.Name }) {
		m.mu.Unlock()
		return fmt.Errorf("add %s: an MCP server of that name exists", cfg.Name)
	}
	conns := append(slices.Clone(m.conns), c)
	slices.SortFunc(conns, func(a, b *conn) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	m.conns = conns
	if cfg.Disabled == "" {
		m.launchLocked(c)
	}
	m.bump()
	m.mu.Unlock()
	if cfg.Disabled != "" {
		return errors.New(cfg.Disabled)
	}
	return m.awaitConn(ctx, c)
}

// awaitConn waits until c is no longer connecting (a sign-in in the browser counts as
// settled) and says why it is not connected.
func (m *Manager) awaitConn(ctx context.Context, c *conn) error {
	for {
		m.mu.Lock()
		pending, status, reason, ch := c.pendingLocked(true), c.status, c.reason, m.changed
		m.mu.Unlock()
		if !pending {
			if status == StatusConnected || status == StatusPending {
				return nil
			}
			return fmt.Errorf("%s: %s", status, reason)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("still connecting: %w", context.Cause(ctx))
		}
	}
}

// Remove disconnects the server called name and forgets it: its tools leave the next
// generation at once, and the model is told. It returns once the server's process has ended
// (or ctx has).
func (m *Manager) Remove(ctx context.Context, name string) error {
	m.ops.Lock()
	defer m.ops.Unlock()
	m.mu.Lock()
	i := slices.IndexFunc(m.conns, func(c *conn) bool { return c.cfg.Name == name })
	if i < 0 {
		m.mu.Unlock()
		return fmt.Errorf("remove %s: no such MCP server", name)
	}
	c := m.conns[i]
	m.conns = slices.Delete(slices.Clone(m.conns), i, i+1)
	if c.live() && len(c.tools) > 0 {
		m.note("MCP server %q was removed; its tools are gone.", name)
	}
	m.bump()
	m.mu.Unlock()
	return m.halt(ctx, c)
}

// Disable switches the server called name off for this session: its tools leave the next
// generation (calling one says the server is off), its status reads disabled, and its
// goroutine and process are stopped before Disable returns. A server disabled by its
// configuration or policy stays as it is.
func (m *Manager) Disable(ctx context.Context, name string) error {
	m.ops.Lock()
	defer m.ops.Unlock()
	c := m.find(name)
	if c == nil {
		return fmt.Errorf("switch off %s: no such MCP server", name)
	}
	m.mu.Lock()
	if c.off || c.cfg.Disabled != "" {
		m.mu.Unlock()
		return nil
	}
	if c.live() {
		c.lastTools = c.tools
		if len(c.tools) > 0 {
			m.note("MCP server %q was switched off; its tools are gone until it is switched on.", name)
		}
	}
	c.off = true
	m.bump()
	m.mu.Unlock()
	return m.halt(ctx, c)
}

// Enable switches a server that Disable switched off on again: it starts anew and Enable
// waits as Add does. A server that is on but failed is reconnected. A server disabled by its
// configuration or policy cannot be switched on.
func (m *Manager) Enable(ctx context.Context, name string) error {
	m.ops.Lock()
	defer m.ops.Unlock()
	c := m.find(name)
	if c == nil {
		return fmt.Errorf("switch on %s: no such MCP server", name)
	}
	if c.cfg.Disabled != "" {
		return fmt.Errorf("switch on %s: %s", name, c.cfg.Disabled)
	}
	m.mu.Lock()
	if !c.off {
		failed := c.status == StatusFailed
		m.mu.Unlock()
		if failed {
			return m.Reconnect(ctx, name)
		}
		return nil
	}
	done := c.done
	m.mu.Unlock()
	if done != nil {
		// A previous stop that ran out of time is still under way.
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("switch on %s: the server is still stopping: %w", name, context.Cause(ctx))
		}
	}
	m.mu.Lock()
	c.off = false
	c.status, c.reason = StatusPending, ""
	m.launchLocked(c)
	m.bump()
	m.mu.Unlock()
	if err := m.awaitConn(ctx, c); err != nil {
		return fmt.Errorf("switch on %s: %w", name, err)
	}
	return nil
}

// Config returns the configuration of the server called name.
func (m *Manager) Config(name string) (ServerConfig, bool) {
	if c := m.find(name); c != nil {
		return c.cfg, true
	}
	return ServerConfig{}, false
}
