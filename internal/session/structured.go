package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// structuredToolName is the tool through which the model gives a structured answer.
const structuredToolName = "StructuredOutput"

// maxStructuredRetries bounds the answers that miss the schema (and the reminders to give
// one) before the turn fails with error_max_structured_output_retries.
const maxStructuredRetries = 5

// structuredTool returns the StructuredOutput tool when a schema was asked for.
func (s *Session) structuredTool() []tool.Tool {
	if len(s.opts.SDK.JSONSchema) == 0 {
		return nil
	}
	return []tool.Tool{structuredOutput{s}}
}

// structuredOutput is the tool the model gives its structured answer with. Its input schema
// is the caller's: the runner checks the answer against it before Call, so a mismatch goes
// back to the model as an error it can correct.
type structuredOutput struct{ s *Session }

func (t structuredOutput) Name() string { return structuredToolName }

func (t structuredOutput) Description() string {
	return "Use this tool to return your final response in the requested structured format. You MUST call this tool exactly once at the end of your response to provide the structured output."
}

func (t structuredOutput) InputSchema() json.RawMessage { return t.s.opts.SDK.JSONSchema }

func (t structuredOutput) ReadOnly(json.RawMessage) bool { return true }

func (t structuredOutput) ConcurrencySafe(json.RawMessage) bool { return true }

// LimitsRetries says checkRun bounds the answers that miss the schema (five, then
// error_max_structured_output_retries), not the loop's repeated-invalid-call guard.
func (t structuredOutput) LimitsRetries() bool { return true }

func (t structuredOutput) Call(_ context.Context, env *tool.Env, input json.RawMessage) tool.Result {
	if env.AgentID != "" {
		return tool.Errorf("only the main agent gives the structured answer")
	}
	t.s.sdk.mu.Lock()
	t.s.sdk.structured = compactJSON(input)
	t.s.sdk.mu.Unlock()
	return tool.Text("Structured output provided successfully")
}

func compactJSON(b []byte) json.RawMessage {
	var out strings.Builder
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return b
	}
	return json.RawMessage(strings.TrimSuffix(out.String(), "\n"))
}

// checkRun is the main agent's own loop.Check when schema (the SDK's output schema) is set:
// the run ends once the structured answer is given, or too many answers missed the schema.
// (The budget is every agent's: budgetCheck.)
func (st *sdkState) checkRun(schema json.RawMessage, out *loop.Outcome) (string, bool) {
	if len(schema) == 0 {
		return "", false
	}
	st.mu.Lock()
	answer, reminders := st.structured, st.reminders
	st.mu.Unlock()
	if answer != nil {
		out.Text = string(answer)
		return "success", true
	}
	if misses := structuredMisses(out.Messages) + reminders; misses >= maxStructuredRetries {
		out.Text = fmt.Sprintf("the model did not give an answer matching the output schema after %d attempts", misses)
		return "error_max_structured_output_retries", true
	}
	return "", false
}

// structuredMisses counts StructuredOutput calls answered with an error in history.
func structuredMisses(history []message.Message) int {
	ids := map[string]bool{}
	n := 0
	for _, m := range history {
		for _, b := range m.Content {
			switch {
			case b.Type == message.TypeToolUse && b.Name == structuredToolName:
				ids[b.ID] = true
			case b.Type == message.TypeToolResult && ids[b.ToolUseID] && b.IsError:
				n++
			}
		}
	}
	return n
}

// structuredStop keeps the main agent going, with a reminder, while a structured answer is
// owed; then the Stop hooks decide.
type structuredStop struct {
	s     *Session
	inner loop.StopChecker
}

func (h structuredStop) CheckStop(ctx context.Context, last message.Message, active bool) string {
	if len(h.s.opts.SDK.JSONSchema) > 0 {
		h.s.sdk.mu.Lock()
		owed := h.s.sdk.structured == nil
		if owed {
			h.s.sdk.reminders++
		}
		h.s.sdk.mu.Unlock()
		if owed {
			return "You must give your final answer by calling the " + structuredToolName + " tool, with input that matches its schema."
		}
	}
	return h.inner.CheckStop(ctx, last, active)
}

// structuredAnswer is the run's structured answer, if one was given.
func (st *sdkState) structuredAnswer() json.RawMessage {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.structured
}
