package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
)

// TestServerToolAndCitationsByteForByte: a server tool's definition and a text block's
// citations are sent exactly as given, spacing and escapes included, with a breakpoint added
// as the last field.
func TestServerToolAndCitationsByteForByte(t *testing.T) {
	citations := json.RawMessage(`[{"type":"web_search_result_location","cited_text":"a \u003cb\u003e","url":"https://go.dev/","title":"Go","encrypted_index":"RW5j"}]`)
	req := &provider.Request{
		MaxTokens: 10,
		Tools: []provider.ToolSpec{{Name: "web_search", Raw: json.RawMessage(`{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}`),
			CacheControl: &message.CacheControl{Type: "ephemeral"}}},
		Messages: []message.Message{
			message.User(message.Text("search")),
			message.Assistant(message.Block{Type: message.TypeText, Text: "Go.", Citations: citations}),
			message.User(message.Text("thanks")),
		},
	}
	body, err := anthropic.EncodeRequest(req, "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":10,"tools":[{"type": "web_search_20250305", "name": "web_search", "max_uses": 8,"cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"search"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"Go.","citations":` + string(citations) + `}]},` +
		`{"role":"user","content":[{"type":"text","text":"thanks"}]}],"stream":true}`
	if string(body) != want {
		t.Errorf("body:\n%s\nwant:\n%s", body, want)
	}
	req.Tools[0].Raw = json.RawMessage(`[1]`)
	if _, err := anthropic.EncodeRequest(req, "m"); err == nil {
		t.Error("a server tool that is not a JSON object was encoded")
	}
}
