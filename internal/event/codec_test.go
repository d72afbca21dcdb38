package event

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
)

// Every struct of this package that embeds Origin is an event the codec must know.
func TestCodecKnowsEveryEvent(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		ts, ok := node.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fl := range st.Fields.List {
			if id, ok := fl.Type.(*ast.Ident); ok && len(fl.Names) == 0 && id.Name == "Origin" {
				n++
				if _, ok := kinds()[ts.Name.Name]; !ok {
					t.Errorf("event %s is missing from the codec's table", ts.Name.Name)
				}
			}
		}
		return false
	})
	if n != len(kinds()) {
		t.Errorf("event.go has %d event types, the codec %d", n, len(kinds()))
	}
}

func TestCodecRoundTrip(t *testing.T) {
	o := Origin{AgentID: "a0123456789abcdef", AgentName: "alice"}
	for _, e := range []Event{
		AssistantMessage{Origin: o, UUID: "u1", Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
			message.Text("hi"), {Type: message.TypeToolUse, ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}}},
			StopReason: "tool_use", Usage: message.Usage{InputTokens: 3, OutputTokens: 4}, Model: "m"},
		ToolEnd{Origin: o, ID: "t1", Name: "Bash", Result: []message.Block{message.Text("out")}, IsError: true, Duration: 1500 * time.Millisecond},
		TeammateState{Origin: o, Name: "alice", Color: "blue", State: "working", Task: "3"},
		TeamMessage{Origin: o, ID: "m1", Sender: "alice", Recipient: "team-lead", Summary: "done", Text: "all done"},
		Notice{Origin: o, Level: "warn", Text: "careful"},
		Result{Subtype: "success", Text: "ok", StructuredOutput: json.RawMessage(`{"a":1}`), ModelUsage: map[string]ModelUsage{"m": {CostUSD: 0.5, PriceKnown: true}}},
	} {
		b, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("round trip mismatch (-want +got):\n%s", diff)
		}
	}
	if _, err := Decode([]byte(`{"type":"Hug","event":{}}`)); err == nil {
		t.Error("an unknown event type decoded")
	}
	if _, err := Encode(Origin{}); err == nil {
		t.Error("an Origin alone encoded as an event")
	}
}
