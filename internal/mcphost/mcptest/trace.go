package mcptest

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ModeTrace runs [Trace] over stdio.
const ModeTrace = "trace"

// Trace is a server with one tool, "trace", that answers with the trace context it sees: the
// TRACEPARENT of its process environment and the traceparent in the call's _meta, as
// "env=<…> meta=<…>".
func Trace() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest-trace", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "trace", Description: "Report the trace context of the process and of the call."},
		func(_ context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			meta, _ := req.Params.Meta["traceparent"].(string)
			return text(fmt.Sprintf("env=%s meta=%s", os.Getenv("TRACEPARENT"), meta)), nil, nil
		})
	return s
}
