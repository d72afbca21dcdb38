package mcphost

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the call limits.
const (
	// DefaultToolTimeout ends a call that hangs when MCP_TOOL_TIMEOUT is not set: long enough
	// for a slow build or query, short enough that a stuck server does not stall a session.
	DefaultToolTimeout = 5 * time.Minute
	// DefaultPingTimeout is how long a server gets to answer the ping sent after one of its
	// calls timed out.
	DefaultPingTimeout = 10 * time.Second
)

// checkHealth pings the server of sess after a call to it timed out. A server that does not
// answer is marked unhealthy: its session is closed and its tools leave the next generation,
// so the model stops calling into a server that cannot answer. It reports the ping's error.
func (c *conn) checkHealth(sess *mcp.ClientSession) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.PingTimeout)
	defer cancel()
	err := sess.Ping(ctx, nil)
	if err == nil {
		return nil
	}
	c.m.mu.Lock()
	if c.session != sess || c.status != StatusConnected {
		c.m.mu.Unlock()
		return err
	}
	c.lastTools = c.tools
	c.session = nil
	c.tools, c.prompts, c.resources = nil, nil, nil
	c.status = StatusFailed
	c.reason = fmt.Sprintf("unhealthy: a call timed out and the server did not answer a ping within %v", c.m.opts.PingTimeout)
	c.unhealthy = true
	c.closing = true
	c.m.note("MCP server %q stopped answering; its tools are gone until it is reconnected.", c.cfg.Name)
	c.logger.Warn("mcp server unhealthy", "err", err)
	c.m.bump()
	c.m.mu.Unlock()
	_ = sess.Close()
	return err
}
