package mcptest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Ways a server can misbehave on the wire, for [BadHTTP].
const (
	BadGarbage   = "garbage"   // every answer is text that is not JSON at all
	BadTruncated = "truncated" // every answer is JSON cut off in the middle
	BadNotRPC    = "not-rpc"   // every answer is JSON, but no JSON-RPC message
	BadProtocol  = "protocol"  // initialize answers a protocol version no one knows
	BadHTML      = "html"      // every answer is a large HTML page (a proxy's error page)
	BadCall      = "call"      // connects and lists one tool, "broken", whose calls get garbage
)

// BadHTTP serves a hand-written streamable HTTP endpoint on 127.0.0.1 that misbehaves as
// kind says, and returns its URL; it stops with t.
func BadHTTP(t testing.TB, kind string) string {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no stream here", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		if req.ID == nil { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		reply := func(result any) {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
			_, _ = w.Write(b)
		}
		if kind == BadCall {
			switch req.Method {
			case "initialize":
				reply(map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
					"serverInfo": map[string]any{"name": "bad", "version": "1"}})
			case "tools/list":
				reply(map[string]any{"tools": []any{map[string]any{"name": "broken", "inputSchema": map[string]any{"type": "object"}}}})
			case "tools/call":
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"content":[{"type":"text","te`)
			default:
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no " + req.Method}})
				_, _ = w.Write(b)
			}
			return
		}
		switch kind {
		case BadHTML:
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body>"+strings.Repeat("<p>Service temporarily unavailable.</p>", 5000)+"</body></html>")
		case BadGarbage:
			_, _ = io.WriteString(w, "Hello! This is not JSON-RPC.\n")
		case BadTruncated:
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"protocolVersion":"2025-06-18","capab`)
		case BadNotRPC:
			_, _ = io.WriteString(w, `{"status":"ok","items":[1,2,3]}`)
		case BadProtocol:
			reply(map[string]any{"protocolVersion": "1999-01-01", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "old", "version": "0.1"}})
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}
