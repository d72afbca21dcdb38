package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ChildEnv is the variable that makes a re-executed test binary run a server instead of tests.
const ChildEnv = "KEEL_MCPTEST_SERVER"

// Modes a child server can run in.
const (
	ModeEverything = "everything" // the everything server over stdio
	ModeHang       = "hang"       // reads stdin and never answers initialize
	ModeExit       = "exit"       // writes to stderr and exits 2 at once
	ModeFlood      = "flood"      // raw JSON-RPC: one tool, "flood", that sends N list_changed first
	ModeGarbage    = "garbage"    // answers every line with a line that is not JSON-RPC
)

// RunIfChild runs the server the environment asks for and exits; call it first in TestMain.
// It returns (doing nothing) when the binary was not started as a server.
func RunIfChild() {
	mode := os.Getenv(ChildEnv)
	if mode == "" {
		return
	}
	switch mode {
	case ModeEverything:
		if err := New().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
		}
	case ModeTrace:
		if err := Trace().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
		}
	case ModeHang:
		_, _ = io.Copy(io.Discard, os.Stdin)
	case ModeExit:
		fmt.Fprintln(os.Stderr, "mcptest: missing dependency, giving up")
		os.Exit(2)
	case ModeFlood:
		runFlood(os.Stdin, os.Stdout)
	case ModeGarbage:
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println("Welcome to the shell! Type help for help.")
		}
	default:
		fmt.Fprintln(os.Stderr, "mcptest: unknown mode", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// Command returns the command, arguments and environment that run mode as a stdio server,
// re-executing the current test binary.
func Command(mode string) (command string, args []string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, []string{"-test.run=^$"}, map[string]string{ChildEnv: mode}
}

// runFlood is a hand-written JSON-RPC server: the Go SDK debounces notifications, so a real
// flood needs raw writes. Calling "flood" with {"count":N} sends N tools/list_changed, then
// the result.
func runFlood(in io.Reader, out io.Writer) {
	w := bufio.NewWriter(out)
	send := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		w.Flush()
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}) }
		switch req.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": "2025-06-18", "serverInfo": map[string]any{"name": "flood", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}}})
		case "tools/list":
			reply(map[string]any{"tools": []any{map[string]any{"name": "flood", "description": "Flood notifications.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"count": map[string]any{"type": "integer"}}}}}})
		case "tools/call":
			var p struct {
				Arguments struct{ Count int } `json:"arguments"`
			}
			_ = json.Unmarshal(req.Params, &p)
			for range p.Arguments.Count {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
			}
			reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": "sent " + strconv.Itoa(p.Arguments.Count)}}})
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + req.Method}})
		}
	}
}
