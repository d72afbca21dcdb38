// Package keeltest is a scripted model for tests of programs that embed keel: a real HTTP
// server on 127.0.0.1 that speaks the Anthropic Messages API (streamed or not) and the
// OpenAI chat completions API, and answers each request by the first of its rules that
// matches — text, thinking, tool calls — so a test runs offline and the same every time.
//
//	model, err := keeltest.Start(ctx,
//		keeltest.Rule{When: keeltest.Match{UserText: "weather"}, Reply: []keeltest.Block{keeltest.ToolUse("Weather", map[string]string{"city": "Oslo"})}},
//		keeltest.Rule{When: keeltest.Match{ToolResult: "Weather"}, Reply: []keeltest.Block{keeltest.Text("It is sunny.")}},
//	)
//	…
//	defer model.Close()
//	sess, err := keel.New(ctx, model.Options(dir, dir))
//
// A request no rule matches gets a short text reply saying so.
package keeltest

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// Rule is one scripted answer and the requests it applies to.
type Rule struct {
	// Name labels the rule in [Model.Requests]; empty means "rule N" (1-based).
	Name string
	// When says which requests the rule answers; the zero Match answers every one.
	When Match
	// Times limits how often the rule answers; 0 means no limit.
	Times int
	// Reply is the answer's content, in order. A reply with a tool call ends with
	// stop_reason tool_use, else end_turn.
	Reply []Block
}

// Match is what a request must have for a rule to answer it; every field set must hold.
// Texts are case-sensitive substrings.
type Match struct {
	// UserText must be in the text of the request's last user message.
	UserText string
	// ToolResult names a tool whose result the last user message carries.
	ToolResult string
	// HasTool must be among the request's tools; LacksTool must not be.
	HasTool, LacksTool string
	// System must be in the system prompt.
	System string
	// Contains must be anywhere in the last user message, tool results included.
	Contains string
}

// Block is one block of a reply.
type Block struct{ b scripted.Block }

// Text is a text block.
func Text(s string) Block { return Block{scripted.Text(s)} }

// Thinking is a thinking block (extended thinking).
func Thinking(s string) Block { return Block{scripted.Thinking(s)} }

// ToolUse is a call of tool name with input, which is encoded as JSON.
func ToolUse(name string, input any) Block { return Block{scripted.ToolUse(name, input)} }

// Model is a running scripted model. It is safe for concurrent use.
type Model struct{ srv *scripted.Server }

// Start starts a model answering by rules on a free port of 127.0.0.1; it stops when ctx
// ends or Close is called.
func Start(ctx context.Context, rules ...Rule) (*Model, error) {
	sc := &scripted.Scenario{}
	for _, r := range rules {
		sr := scripted.Rule{Name: r.Name, Times: r.Times, When: scripted.Match{UserText: r.When.UserText, ToolResult: r.When.ToolResult,
			HasTool: r.When.HasTool, LacksTool: r.When.LacksTool, System: r.When.System, Contains: r.When.Contains}}
		for _, b := range r.Reply {
			sr.Reply = append(sr.Reply, b.b)
		}
		sc.Rules = append(sc.Rules, sr)
	}
	srv, err := scripted.Start(ctx, "", sc, scripted.Options{})
	if err != nil {
		return nil, fmt.Errorf("start the scripted model: %w", err)
	}
	return &Model{srv: srv}, nil
}

// URL is the model's base URL (for ANTHROPIC_BASE_URL or [keel.Options].BaseURL).
func (m *Model) URL() string { return m.srv.URL() }

// Close stops the model.
func (m *Model) Close() error { return m.srv.Close() }

// Request is one request the model received.
type Request struct {
	// Rule is the name of the rule that answered it ("fallback" when none did).
	Rule string
	// Body is the request's JSON body, as sent.
	Body []byte
}

// Requests lists the requests received so far, in order.
func (m *Model) Requests() []Request {
	var out []Request
	for _, r := range m.srv.Requests() {
		out = append(out, Request{Rule: r.Rule, Body: r.Body})
	}
	return out
}

// Options are session options that talk to this model, working in cwd with keel's files
// under home, and reading nothing from the process's environment.
func (m *Model) Options(cwd, home string) keel.Options {
	return keel.Options{Cwd: cwd, Home: home, BaseURL: m.URL(), APIKey: "keeltest", Model: "claude-sonnet-4-5",
		Getenv: func(string) string { return "" }}
}
