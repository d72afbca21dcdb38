package mcphost

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RawNamer is implemented by MCP tools: the server and tool names as the server spells them,
// for the call and for display.
type RawNamer interface {
	Raw() (server, tool string)
}

// mcpTool is one server tool as a [tool.Tool]. It is immutable; the server it calls is looked
// up at call time, so a tool of a lost server fails clearly.
type mcpTool struct {
	c        *conn
	server   string
	rawTool  string
	name     string
	desc     string
	schema   json.RawMessage
	readOnly bool
	// annotations are the server's hints, as listed (nil: none).
	annotations *mcp.ToolAnnotations
}

var (
	_ tool.Tool = (*mcpTool)(nil)
	_ RawNamer  = (*mcpTool)(nil)
)

func (t *mcpTool) Name() string                 { return t.name }
func (t *mcpTool) Description() string          { return t.desc }
func (t *mcpTool) InputSchema() json.RawMessage { return t.schema }
func (t *mcpTool) Raw() (string, string)        { return t.server, t.rawTool }

// Annotations are the hints the server listed the tool with (nil: none), for status reports.
func (t *mcpTool) Annotations() *mcp.ToolAnnotations { return t.annotations }

// ReadOnly follows the server's readOnlyHint: a hint, but the only signal there is.
func (t *mcpTool) ReadOnly(json.RawMessage) bool { return t.readOnly }

// ConcurrencySafe: only read-only tools run in parallel; a remote write may depend on order.
func (t *mcpTool) ConcurrencySafe(json.RawMessage) bool { return t.readOnly }

var progressSeq atomic.Uint64

func (t *mcpTool) Call(ctx context.Context, env *tool.Env, input json.RawMessage) tool.Result {
	m := t.c.m
	m.mu.Lock()
	sess, status, reason, off := t.c.session, t.c.status, t.c.reason, t.c.off
	m.mu.Unlock()
	if off {
		return tool.Errorf("MCP server %q is switched off for this session; its tool %s is not available.", t.server, t.name)
	}
	if sess == nil || status != StatusConnected {
		return tool.Errorf("MCP server %q is %s (%s); its tool %s is not available. Do not retry it unless the server reconnects.", t.server, status, reason, t.name)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, m.opts.ToolTimeout, errToolTimeout)
	defer cancel()
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	params := &mcp.CallToolParams{Name: t.rawTool, Arguments: input}
	if env != nil && env.Traceparent != "" {
		// The call's span, in the request's _meta as OpenTelemetry's MCP conventions carry it,
		// so a server's span for the call is its child.
		params.Meta = mcp.Meta{"traceparent": env.Traceparent}
	}
	if env != nil && env.Progress != nil {
		token := fmt.Sprintf("keel-%d", progressSeq.Add(1))
		params.SetProgressToken(token)
		m.progress.Store(token, env.Progress)
		defer m.progress.Delete(token)
	}
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		return t.callError(ctx, sess, err)
	}
	out := convert(res, m.opts.MaxOutputTokens)
	if !t.readOnly {
		out.Effects = []string{fmt.Sprintf("called MCP tool %s on server %s (remote side effects cannot be rewound)", t.rawTool, t.server)}
	}
	return out
}

var errToolTimeout = errors.New("MCP tool timeout")

func (t *mcpTool) callError(ctx context.Context, sess *mcp.ClientSession, err error) tool.Result {
	switch {
	case errors.Is(context.Cause(ctx), errToolTimeout):
		if perr := t.c.checkHealth(sess); perr != nil {
			return tool.Errorf("MCP tool %s timed out after %v (MCP_TOOL_TIMEOUT), and server %q does not answer pings either; keel marked it unhealthy and its tools are gone until it is reconnected. Do not retry the call; it may have had an effect on the server.",
				t.name, t.c.m.opts.ToolTimeout, t.server)
		}
		return tool.Errorf("MCP tool %s timed out after %v (MCP_TOOL_TIMEOUT); the server was told to cancel it, but it may have had an effect already", t.name, t.c.m.opts.ToolTimeout)
	case ctx.Err() != nil:
		return tool.Errorf("MCP tool %s was interrupted: %v; the server was told to cancel it", t.name, context.Cause(ctx))
	}
	m := t.c.m
	m.mu.Lock()
	status, reason := t.c.status, t.c.reason
	m.mu.Unlock()
	if status != StatusConnected || errors.Is(err, mcp.ErrConnectionClosed) {
		return tool.Errorf("MCP server %q disconnected during the call to %s (%s): %v", t.server, t.name, reason, err)
	}
	return tool.Errorf("MCP error from %s: %v", t.name, err)
}

// convert turns a call result into tool result blocks, capped at maxTokens (≈4 chars each).
func convert(res *mcp.CallToolResult, maxTokens int) tool.Result {
	var blocks []message.Block
	for _, c := range res.Content {
		blocks = append(blocks, contentBlocks(c)...)
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			blocks = append(blocks, message.Text(string(b)))
		}
	}
	if len(blocks) == 0 {
		blocks = []message.Block{message.Text("(no content)")}
	}
	blocks = capBlocks(blocks, maxTokens*4)
	return tool.Result{Content: blocks, IsError: res.IsError, Output: res.StructuredContent}
}

func contentBlocks(c mcp.Content) []message.Block {
	switch c := c.(type) {
	case *mcp.TextContent:
		return []message.Block{message.Text(c.Text)}
	case *mcp.ImageContent:
		return []message.Block{imageBlock(c.MIMEType, c.Data)}
	case *mcp.AudioContent:
		return []message.Block{message.Text(fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))}
	case *mcp.ResourceLink:
		s := fmt.Sprintf("[resource link: %s", c.URI)
		if c.Name != "" {
			s += " (" + c.Name + ")"
		}
		if c.Description != "" {
			s += ": " + c.Description
		}
		return []message.Block{message.Text(s + "]")}
	case *mcp.EmbeddedResource:
		return resourceBlocks(c.Resource)
	}
	b, _ := json.Marshal(c)
	return []message.Block{message.Text(string(b))}
}

func resourceBlocks(r *mcp.ResourceContents) []message.Block {
	if r == nil {
		return nil
	}
	switch {
	case r.Text != "":
		return []message.Block{message.Text(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))}
	case len(r.Blob) > 0 && strings.HasPrefix(r.MIMEType, "image/"):
		return []message.Block{imageBlock(r.MIMEType, r.Blob)}
	case len(r.Blob) > 0:
		return []message.Block{message.Text(fmt.Sprintf("[resource %s: %s, %d bytes of binary data, not shown]", r.URI, r.MIMEType, len(r.Blob)))}
	}
	return []message.Block{message.Text(fmt.Sprintf("[resource %s: empty]", r.URI))}
}

func imageBlock(mime string, data []byte) message.Block {
	return message.Block{Type: message.TypeImage, Source: &message.ImageSource{Type: "base64", MediaType: mime, Data: base64.StdEncoding.EncodeToString(data)}}
}

// capBlocks keeps the text within limit characters (an image counts its base64 length), and
// says what was cut so the model can ask for less.
func capBlocks(blocks []message.Block, limit int) []message.Block {
	total := 0
	for _, b := range blocks {
		total += blockSize(b)
	}
	if total <= limit {
		return blocks
	}
	var out []message.Block
	used, dropped := 0, 0
	for _, b := range blocks {
		n := blockSize(b)
		switch {
		case used+n <= limit:
			out = append(out, b)
			used += n
		case b.Type == message.TypeText && used < limit:
			keep := limit - used
			for keep > 0 && !utf8Start(b.Text, keep) {
				keep--
			}
			b.Text = b.Text[:keep]
			out = append(out, b)
			used = limit
		default:
			dropped++
		}
	}
	note := fmt.Sprintf("\n\n[output truncated: the tool returned about %d tokens (%d characters); only the first %d tokens are shown (MAX_MCP_OUTPUT_TOKENS=%d)", total/4, total, limit/4, limit/4)
	if dropped > 0 {
		note += fmt.Sprintf("; %d further content blocks were dropped", dropped)
	}
	note += ". Ask the tool for a smaller result (a narrower query, pagination or a filter) if you need the rest.]"
	return append(out, message.Text(note))
}

func blockSize(b message.Block) int {
	if b.Source != nil {
		return len(b.Source.Data)
	}
	return len(b.Text)
}

func utf8Start(s string, i int) bool { return i >= len(s) || s[i]&0xC0 != 0x80 }
