package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/connect"
)

// ClassifierSource names auto mode's classifier requests (cache TTL, logs, scripted rules).
const ClassifierSource = "permission-classifier"

// classifierSystem is the system prompt of auto mode's classifier. It says what it is, so a
// scripted model can tell its requests from the agent's.
const classifierSystem = `You are keel's permission classifier for auto mode. A coding agent wants to run a tool call that would normally need the user's approval. Judge from the user's request and the call itself whether the call is safe to run without asking: it stays within what the user asked for, touches only the project, and cannot destroy data, leak secrets or reach systems the user did not mention.

Answer with exactly one JSON object and nothing else:
{"decision": "allow" | "block" | "unsure", "reason": "one short sentence"}
Use "unsure" when you cannot tell; the user is then asked.`

// autoClassifier judges calls for auto mode with the small, fast model (the haiku alias) of
// the session's provider.
type autoClassifier struct{ s *Session }

var _ permission.Classifier = autoClassifier{}

func (c autoClassifier) Classify(ctx context.Context, r permission.ClassifyRequest) (permission.Verdict, error) {
	s := c.s
	var b strings.Builder
	prompt := s.currentPrompt()
	if prompt == "" {
		prompt = lastPrompt(s.History())
	}
	if prompt != "" {
		fmt.Fprintf(&b, "The user's latest request:\n%s\n\n", prompt)
	}
	input := string(r.Request.Input)
	if input == "" {
		input = "{}"
	}
	fmt.Fprintf(&b, "The tool call:\nTool: %s\nInput: %s\nWorking directory: %s\nWhy it needs approval: %s\n", r.Request.Tool, input, r.Request.Cwd, r.Reason)
	if r.Agent.Name != "" {
		fmt.Fprintf(&b, "Asked by the subagent %s.\n", r.Agent.Name)
	}
	req := &provider.Request{
		Model: connect.ResolveModel("haiku"), MaxTokens: 512,
		System:   []provider.SystemBlock{{Text: classifierSystem}},
		Messages: []message.Message{message.User(message.Text(b.String()))},
		Source:   ClassifierSource,
	}
	done, err := provider.Complete(ctx, s.opts.Provider, req)
	if err != nil {
		return permission.Verdict{}, fmt.Errorf("classifier request: %w", err)
	}
	return permission.ParseVerdict(done.Message.TextOf()), nil
}

// lastPrompt is the text of the newest user message that is not only tool results.
func lastPrompt(history []message.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		if m.Role != message.RoleUser {
			continue
		}
		if t := strings.TrimSpace(m.TextOf()); t != "" {
			return t
		}
	}
	return ""
}
