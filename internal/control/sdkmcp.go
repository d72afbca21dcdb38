package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost"
)

// sdkServer is one of the SDK's in-process MCP servers.
type sdkServer struct {
	name string
	t    *mcphost.ControlTransport
}

// sdkTransports returns a transport for each in-process server named (by initialize or
// mcp_set_servers): keel's messages go out as mcp_message requests and the server's answers
// come back in their responses. A server known already keeps its transport.
func (c *controller) sdkTransports(names []string) map[string]mcp.Transport {
	if len(names) == 0 {
		return nil
	}
	out := map[string]mcp.Transport{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range names {
		if srv := c.sdkMCP[name]; srv != nil {
			out[name] = srv.t
			continue
		}
		srv := &sdkServer{name: name}
		srv.t = &mcphost.ControlTransport{Send: func(ctx context.Context, msg json.RawMessage) (json.RawMessage, error) {
			return c.sendMCP(ctx, name, msg)
		}}
		c.sdkMCP[name] = srv
		out[name] = srv.t
	}
	return out
}

// forgetSDKServers drops the transports of servers the session removed: the SDK's
// mcp_message for one of them is an error from now on.
func (c *controller) forgetSDKServers(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range names {
		delete(c.sdkMCP, name)
	}
}

// sendMCP sends one JSON-RPC message to an SDK server and returns its mcp_response.
func (c *controller) sendMCP(ctx context.Context, server string, msg json.RawMessage) (json.RawMessage, error) {
	resp, err := c.request(ctx, map[string]any{"subtype": "mcp_message", "server_name": server, "message": msg})
	if err != nil {
		return nil, err
	}
	var body struct {
		MCPResponse json.RawMessage `json:"mcp_response"`
	}
	if err := json.Unmarshal(resp, &body); err != nil || len(body.MCPResponse) == 0 {
		return nil, fmt.Errorf("mcp_message to %s: the answer has no mcp_response", server)
	}
	return body.MCPResponse, nil
}

// onMCPMessage takes a message an SDK server sent on its own (a notification such as
// tools/list_changed, or a request to keel) and answers with keel's response, if any.
func (c *controller) onMCPMessage(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		ServerName string          `json:"server_name"`
		Message    json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.ServerName == "" || len(req.Message) == 0 {
		return nil, errors.New("mcp_message: want {\"server_name\": …, \"message\": {JSON-RPC}}")
	}
	c.mu.Lock()
	srv := c.sdkMCP[req.ServerName]
	c.mu.Unlock()
	if srv == nil {
		return nil, fmt.Errorf("mcp_message: no SDK MCP server named %q", req.ServerName)
	}
	resp, err := srv.t.Deliver(ctx, req.Message)
	if err != nil {
		return nil, fmt.Errorf("mcp_message to keel from %s: %w", req.ServerName, err)
	}
	if resp == nil {
		resp = json.RawMessage(`{"jsonrpc":"2.0","result":{},"id":0}`)
	}
	return map[string]any{"mcp_response": resp}, nil
}

// elicit puts an MCP server's elicitation to the SDK, whose onElicitation callback answers;
// an SDK without one declines. It is the function the MCP client's elicitation seam calls.
func (c *controller) elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	req := map[string]any{"subtype": "elicitation", "mcp_server_name": server, "message": p.Message}
	if p.Mode != "" {
		req["mode"] = p.Mode
	}
	if p.URL != "" {
		req["url"] = p.URL
	}
	if p.ElicitationID != "" {
		req["elicitation_id"] = p.ElicitationID
	}
	if p.RequestedSchema != nil {
		req["requested_schema"] = p.RequestedSchema
	}
	resp, err := c.request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("elicitation: %w", err)
	}
	var res mcp.ElicitResult
	if err := json.Unmarshal(resp, &res); err != nil {
		return nil, fmt.Errorf("elicitation: the answer is not an ElicitResult: %w", err)
	}
	switch res.Action {
	case "accept", "decline", "cancel":
	default:
		return nil, fmt.Errorf("elicitation: action %q is not one of accept, decline, cancel", res.Action)
	}
	return &res, nil
}
