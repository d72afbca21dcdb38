package loop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
)

func use(id string) message.Block {
	return message.Block{Type: message.TypeToolUse, ID: id, Name: "Bash", Input: json.RawMessage(`{}`)}
}

func res(id string) message.Block {
	return message.ToolResult(id, []message.Block{message.Text("ok " + id)}, false)
}

// shape renders a history compactly: roles, then block kinds with ids.
func shape(h []message.Message) string {
	var parts []string
	for _, m := range h {
		var bs []string
		for _, b := range m.Content {
			switch b.Type {
			case message.TypeToolUse:
				bs = append(bs, "use:"+b.ID)
			case message.TypeToolResult:
				bs = append(bs, "res:"+b.ToolUseID)
			default:
				bs = append(bs, b.Type+":"+b.Text)
			}
		}
		parts = append(parts, string(m.Role)+"["+strings.Join(bs, " ")+"]")
	}
	return strings.Join(parts, " ")
}

func TestRepairHistory(t *testing.T) {
	u := func(bs ...message.Block) message.Message { return message.User(bs...) }
	a := func(bs ...message.Block) message.Message { return message.Assistant(bs...) }
	tx := message.Text
	tests := []struct {
		name  string
		in    []message.Message
		want  string
		notes int
	}{
		{"valid stays as it is", []message.Message{u(tx("go")), a(use("1")), u(res("1")), u(tx("news"))},
			"user[text:go] assistant[use:1] user[res:1] user[text:news]", 0},
		{"results split over two messages of one turn", []message.Message{u(tx("go")), a(use("1"), use("2")), u(res("1")), u(res("2"))},
			"user[text:go] assistant[use:1 use:2] user[res:1] user[res:2]", 0},
		{"prompt after an unanswered call", []message.Message{u(tx("go")), a(use("1")), u(tx("next"))},
			"user[text:go] assistant[use:1] user[res:1 text:next]", 1},
		{"result after text", []message.Message{u(tx("go")), a(use("1")), u(tx("note"), res("1"))},
			"user[text:go] assistant[use:1] user[res:1 text:note]", 1},
		{"result answering nothing", []message.Message{u(tx("go"), res("9")), a(tx("hm"))},
			"user[text:go text:[result of tool call 9, which is not part of the turn before]\nok 9] assistant[text:hm]", 1},
		{"empty text", []message.Message{u(tx("go"), tx(" ")), a(tx(""))},
			"user[text:go] assistant[text:(empty)]", 1},
		{"calls at the end", []message.Message{u(tx("go")), a(tx("x"), use("1"))},
			"user[text:go] assistant[text:x text:[tool call 1 to Bash, never answered]]", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := shape(tt.in)
			got, notes := RepairHistory(tt.in)
			if diff := cmp.Diff(tt.want, shape(got)); diff != "" {
				t.Errorf("repaired history mismatch (-want +got):\n%s", diff)
			}
			if (len(notes) == 0) != (tt.notes == 0) {
				t.Errorf("notes %q, want %d", notes, tt.notes)
			}
			if shape(tt.in) != before {
				t.Error("RepairHistory changed its input")
			}
			if len(got) != len(tt.in) {
				t.Errorf("%d messages became %d: entry ids would no longer line up", len(tt.in), len(got))
			}
		})
	}
}

// TestRefusedRequestIsRepairedOnce: a history the API refuses is repaired and sent once more;
// a refusal that repair cannot help is not retried.
func TestRefusedRequestIsRepairedOnce(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "refuse"}, Fault: &scripted.Fault{Status: 400, Message: "scripted refusal"}},
		{Reply: []scripted.Block{scripted.Text("fine")}},
	}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	agent := &Agent{Provider: provider.WithRetries(p, provider.RetryPolicy{}, nil), Model: "claude-test"}
	broken := []message.Message{message.User(message.Text("go")), message.Assistant(use("1")), message.User(message.Text("next"))}
	out, err := agent.Run(t.Context(), broken)
	if err != nil || out.Text != "fine" {
		t.Fatalf("run = %q, %v; want the repaired history to go through", out.Text, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Status != 400 || reqs[1].Status != 200 {
		t.Fatalf("requests: %+v", reqs)
	}

	agent = &Agent{Provider: provider.WithRetries(p, provider.RetryPolicy{}, nil), Model: "claude-test"}
	out, err = agent.Run(t.Context(), []message.Message{message.User(message.Text("refuse"))})
	if err == nil || out.Subtype != "error_during_execution" || !strings.Contains(err.Error(), "scripted refusal") {
		t.Fatalf("refusal: %v (%s)", err, out.Subtype)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("a refusal repair cannot help was sent %d times, want once", n-2)
	}
}

// TestSameInvalidCallStopsTheRun: a model that sends the same broken call every turn is
// stopped after three, with an explanation, instead of looping.
func TestSameInvalidCallStopsTheRun(t *testing.T) {
	sc := &scripted.Scenario{Fallback: &scripted.Rule{Reply: []scripted.Block{
		{Kind: scripted.KindToolUse, Name: "Bash", RawInput: `{"command": "ls -`}}}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	agent := &Agent{Provider: p, Model: "claude-test"}
	out, err := agent.Run(t.Context(), []message.Message{message.User(message.Text("go"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.Subtype != "error_during_execution" || !strings.Contains(out.Text, "same invalid tool call 3 times in a row") || !strings.Contains(out.Text, "Bash") {
		t.Errorf("outcome %s: %q", out.Subtype, out.Text)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3", n)
	}
	if last := out.Messages[len(out.Messages)-1]; last.Role != message.RoleUser || len(last.Content) != 1 || last.Content[0].Type != message.TypeToolResult {
		t.Errorf("the history must end with the answered call: %s", shape(out.Messages))
	}
}

// failingRecorder is a sink whose disk is gone: it cannot record a call's start.
type failingRecorder struct{ started []string }

func (f *failingRecorder) Emit(event.Event)                                        {}
func (f *failingRecorder) Append(context.Context, message.Message) (string, error) { return "", nil }
func (f *failingRecorder) EndTurn(context.Context) error                           { return nil }
func (f *failingRecorder) ToolStarted(_ context.Context, c tool.Call) error {
	f.started = append(f.started, c.ID)
	return errors.New("disk full")
}

// TestCallThatCannotBeRecordedDoesNotRun: a call with side effects runs only once its start is
// on record; a read-only call needs no record.
func TestCallThatCannotBeRecordedDoesNotRun(t *testing.T) {
	ran := map[string]int{}
	mk := func(name string, readOnly bool) tool.Tool {
		return tool.New(tool.Spec[struct{}]{Name: name, Description: name, Schema: json.RawMessage(`{"type":"object"}`),
			IsReadOnly: func(struct{}) bool { return readOnly },
			Run:        func(context.Context, *tool.Env, struct{}) tool.Result { ran[name]++; return tool.Text("ran") }})
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "go"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Write1", map[string]any{}), scripted.ToolUse("Look", map[string]any{})}},
		{Reply: []scripted.Block{scripted.Text("done")}},
	}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	sink := &failingRecorder{}
	pool := tool.Assemble([]tool.Tool{mk("Write1", false), mk("Look", true)}, nil)
	agent := &Agent{Provider: p, Model: "claude-test", Sink: sink, Pool: func(context.Context) *tool.Pool { return pool }}
	out, err := agent.Run(t.Context(), []message.Message{message.User(message.Text("go"))})
	if err != nil {
		t.Fatal(err)
	}
	if ran["Write1"] != 0 || ran["Look"] != 1 || len(sink.started) != 1 {
		t.Errorf("runs %v, recorded %v", ran, sink.started)
	}
	results := out.Messages[2].Content
	if got := (message.Message{Content: results[0].Content}).TextOf(); !results[0].IsError || !strings.Contains(got, "could not record") || !strings.Contains(got, "disk full") {
		t.Errorf("result of the unrecorded call: %q", got)
	}
}

// TestBlankReplyTextIsNotSentBack: a reply with an empty text block (the API sends them before
// tool calls) or no content at all is kept in a form the API takes back: no request is refused.
func TestBlankReplyTextIsNotSentBack(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "go"}, Times: 1, Reply: []scripted.Block{scripted.Text(""), scripted.ToolUse("Look", map[string]any{})}},
		{When: scripted.Match{ToolResult: "Look"}, Times: 1, Reply: []scripted.Block{}},
		{Reply: []scripted.Block{scripted.Text("fine")}},
	}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	look := tool.New(tool.Spec[struct{}]{Name: "Look", Description: "Look", Schema: json.RawMessage(`{"type":"object"}`),
		IsReadOnly: func(struct{}) bool { return true },
		Run:        func(context.Context, *tool.Env, struct{}) tool.Result { return tool.Text("seen") }})
	pool := tool.Assemble([]tool.Tool{look}, nil)
	agent := &Agent{Provider: p, Model: "claude-test", Pool: func(context.Context) *tool.Pool { return pool }}
	out, err := agent.Run(t.Context(), []message.Message{message.User(message.Text("go"))})
	if err != nil {
		t.Fatal(err)
	}
	if out.Messages[1].Content[0].Type != message.TypeToolUse || out.Messages[3].TextOf() != noContentText {
		t.Errorf("history: %s", shape(out.Messages))
	}
	out, err = agent.Run(t.Context(), append(out.Messages, message.User(message.Text("again"))))
	if err != nil || out.Text != "fine" {
		t.Fatalf("next run: %q, %v", out.Text, err)
	}
	for _, r := range srv.Requests() {
		if r.Status != 200 {
			t.Errorf("request %d refused: %s", r.N, r.Error)
		}
	}
}
