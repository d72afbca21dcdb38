package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
)

// A tool result of one plain text block travels as a string, as Claude Code sends it; one
// with an image, citations or a breakpoint of its own keeps the block list. Decoding the body
// gives back the messages that were encoded.
func TestToolResultContentRoundTrip(t *testing.T) {
	img := message.Block{Type: message.TypeImage, Source: &message.ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBO"}}
	msgs := []message.Message{
		message.User(message.Text("read it")),
		message.Assistant(message.ToolUse("toolu_1", "Read", json.RawMessage(`{"file_path":"a.go"}`)), message.ToolUse("toolu_2", "Read", json.RawMessage(`{"file_path":"a.png"}`))),
		message.User(message.ToolResult("toolu_1", []message.Block{message.Text("1\tpackage a\n")}, false),
			message.ToolResult("toolu_2", []message.Block{message.Text("an image:"), img}, false)),
	}
	body, err := anthropic.EncodeRequest(&provider.Request{Model: "m", Messages: msgs}, "")
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Messages []struct {
			Content []struct {
				Content json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		t.Fatal(err)
	}
	if got := string(wire.Messages[2].Content[0].Content); got != `"1\tpackage a\n"` {
		t.Errorf("a plain text result is sent as %s, want a string", got)
	}
	if got := wire.Messages[2].Content[1].Content; len(got) == 0 || got[0] != '[' {
		t.Errorf("a result with an image is sent as %s, want a block list", got)
	}
	back, err := anthropic.DecodeMessages(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msgs, back); diff != "" {
		t.Errorf("decoded messages (-encoded +decoded):\n%s", diff)
	}
}
