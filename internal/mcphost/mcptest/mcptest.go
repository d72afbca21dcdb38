// Package mcptest provides real MCP servers built with the Go SDK for keel's tests: an
// "everything" server (echo, add_tool, slow with progress, crash, huge output, content of
// every kind, elicitation, roots, an invalid schema, prompts, resources), a server that never
// answers initialize, a raw server that floods notifications, and an OAuth-protected HTTP
// server with a local authorization server (oauth.go). Each runs in process (in
// memory or over HTTP on 127.0.0.1) or as a stdio subprocess by re-executing the test binary
// (see [RunIfChild]).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Instructions are the everything server's instructions.
const Instructions = "Use echo to test the connection."

// Server is the everything server plus what tests observe of it.
type Server struct {
	*mcp.Server
	// Cancelled receives the id of every slow call whose context was cancelled.
	Cancelled chan string
	// notified is signalled when a tools/list_changed notification has been sent.
	notified chan struct{}

	// mu guards added.
	mu    sync.Mutex
	added []string
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type nameIn struct {
	Name string `json:"name" jsonschema:"the tool name"`
}

type slowIn struct {
	Steps int    `json:"steps" jsonschema:"progress notifications to send before waiting"`
	ID    string `json:"id,omitempty" jsonschema:"an id reported on cancellation"`
	Wait  bool   `json:"wait,omitempty" jsonschema:"wait until cancelled after the steps"`
}

type hugeIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

type empty struct{}

// New returns the everything server.
func New() *Server {
	s := &Server{Cancelled: make(chan string, 16), notified: make(chan struct{}, 64)}
	s.Server = mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: Instructions,
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
	})
	// A well-behaved server announces a change before it answers the call that made it; the
	// SDK debounces notifications, so add_tool waits until the notification has gone out.
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "notifications/tools/list_changed" {
				select {
				case s.notified <- struct{}{}:
				default:
				}
			}
			return res, err
		}
	})
	s.addCallTools()
	s.addContentTools()
	s.addClientTools()
	// A tool whose schema is not a valid JSON schema: the client must skip it, not die.
	s.Server.AddTool(&mcp.Tool{Name: "bad_schema", Description: "Has an invalid schema.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"nonsense"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("unreachable"), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"]}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://hello", Name: "hello", MIMEType: "text/plain", Description: "A greeting."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello, resource"}}}, nil
		})
	return s
}

// addCallTools adds the tools about the call itself: echo, add_tool, slow (progress,
// cancellation), crash and huge.
func (s *Server) addCallTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s.Server, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "add_tool", Description: "Add an echo tool with the given name."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			s.AddEcho(in.Name)
			select {
			case <-s.notified:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return text("added " + in.Name), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "slow", Description: "Send progress, then optionally wait until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.Steps; i++ {
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps), Message: "step"})
				}
			}
			if in.Wait {
				<-ctx.Done()
				s.Cancelled <- in.ID
				return nil, nil, ctx.Err()
			}
			return text(fmt.Sprintf("done after %d steps", in.Steps)), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "crash", Description: "Exit the server process (stdio only)."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "huge", Description: "Return many bytes of text.", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in hugeIn) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("abcdefghij", in.Bytes/10) + strings.Repeat("x", in.Bytes%10)), nil, nil
		})
}

// addContentTools adds the tools whose results test conversion: content of every kind,
// structured content only, an error result.
func (s *Server) addContentTools() {
	mcp.AddTool(s.Server, &mcp.Tool{Name: "content", Description: "Return content of every kind."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "hello"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://doc", MIMEType: "text/plain", Text: "embedded text"}},
				&mcp.ResourceLink{URI: "test://link", Name: "link", Description: "a link"},
			}, StructuredContent: map[string]any{"ok": true}}, nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "structured", Description: "Return only structured content."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"answer": 42}}, nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "fail", Description: "Return an error result."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it went wrong"}}}, nil, nil
		})
}

// addClientTools adds the tools that ask the client: elicitation (with and without defaults)
// and roots.
func (s *Server) addClientTools() {
	mcp.AddTool(s.Server, &mcp.Tool{Name: "ask", Description: "Ask the user a question (elicitation)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			b, _ := json.Marshal(res.Content)
			return text(res.Action + " " + string(b)), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "ask_defaults", Description: "Ask with defaults for every field (SEP-1034)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			caps := req.Session.InitializeParams().Capabilities
			if caps == nil || caps.Elicitation == nil {
				return text("no elicitation capability"), nil, nil
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Confirm your details",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
					"name":     map[string]any{"type": "string", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "default": 30},
					"status":   map[string]any{"type": "string", "enum": []any{"active", "inactive"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "default": true},
				}}})
			if err != nil {
				return nil, nil, err
			}
			b, _ := json.Marshal(res.Content)
			return text(res.Action + " " + string(b)), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "roots", Description: "List the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(strings.Join(uris, "\n")), nil, nil
		})
}

// AddEcho adds an echo tool called name; connected clients get tools/list_changed.
func (s *Server) AddEcho(name string) {
	s.mu.Lock()
	s.added = append(s.added, name)
	s.mu.Unlock()
	mcp.AddTool(s.Server, &mcp.Tool{Name: name, Description: "Echo (added at run time).", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(name + ": " + in.Text), nil, nil
		})
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// GateList makes tools/list block until release is closed, to hold a relist in
// flight.
func (s *Server) GateList(release <-chan struct{}) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
}

// Freeze makes the server stop answering: every request from then on (ping included) waits
// until the client gives up on it, as a server stuck in a deadlock does.
func (s *Server) Freeze() {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}
	})
}
