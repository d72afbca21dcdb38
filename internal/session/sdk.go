package session

import (
	"context"

	"github.com/keel-dev/keel/internal/effort"

	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/tool"
)

// SDKOptions are what the Agent SDK's options add to a session, through its CLI flags and
// its initialize request; they work from the command line too.
type SDKOptions struct {
	// HookCallbacks are hooks the driving program answers (its hook callbacks); CallHook
	// runs one.
	HookCallbacks []hooks.Callback
	CallHook      hooks.CallFunc
	// JSONSchema asks for the final answer as JSON matching it: the model gets a
	// StructuredOutput tool with this input schema, a mismatch is sent back to it, and the
	// valid answer becomes the result's StructuredOutput (--json-schema).
	JSONSchema json.RawMessage
	// LimitSources restricts the filesystem sources to SettingSources ("user", "project",
	// "local"): settings files, memory files, skills and agents of the other levels are not
	// read (--setting-sources; an empty list reads none).
	LimitSources   bool
	SettingSources []string
	// LimitTools offers only the built-in tools named in BuiltinTools (--tools).
	LimitTools   bool
	BuiltinTools []string
	// MaxBudgetUSD ends a turn once the session has cost this much (error_max_budget_usd).
	MaxBudgetUSD float64
	// FallbackModel answers when the main model is overloaded or unavailable.
	FallbackModel string
	// Effort, ThinkingMode (adaptive, enabled, disabled) and MaxThinkingTokens set the main
	// agent's extended thinking (--effort, --thinking, --max-thinking-tokens): a budget
	// wins, then the effort's budget; disabled turns thinking off.
	Effort            string
	ThinkingMode      string
	MaxThinkingTokens int64
	// ResumeSessionAt, with Resume, continues from this assistant message, dropping what
	// came after it.
	ResumeSessionAt string
	// SetupTrigger runs the Setup hooks at the start: "init" or "maintenance" (keel --init,
	// --maintenance).
	SetupTrigger string
}

// structuredToolName is the tool through which the model gives a structured answer.
const structuredToolName = "StructuredOutput"

// maxStructuredRetries bounds the answers that miss the schema (and the reminders to give
// one) before the turn fails with error_max_structured_output_retries.
const maxStructuredRetries = 5

// sdkState is the session's state for the SDK options.
type sdkState struct {
	// mu guards thinking, cancel and the structured answer of the run in progress.
	mu         sync.Mutex
	thinking   *provider.Thinking
	structured json.RawMessage
	reminders  int
	// cancel interrupts the Send in progress (an answer that denies and interrupts).
	cancel context.CancelCauseFunc
	// prompt is the prompt of the Send in progress, for auto mode's classifier; turn names
	// it for hooks.
	prompt, turn string
}

func (st *sdkState) setCancel(c context.CancelCauseFunc) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cancel = c
}

// interrupt ends the Send in progress, as Esc would.
func (st *sdkState) interrupt() {
	st.mu.Lock()
	c := st.cancel
	st.mu.Unlock()
	if c != nil {
		c(loop.ErrInterrupted)
	}
}

// sourceAllowed says whether filesystem sources of a level (user, project, local) are read.
func (s *Session) sourceAllowed(level string) bool {
	return !s.opts.SDK.LimitSources || slices.Contains(s.opts.SDK.SettingSources, level)
}

// fileScopes is the settings files' scopes --setting-sources allows; nil means all.
func (s *Session) fileScopes() []settings.Scope {
	if !s.opts.SDK.LimitSources {
		return nil
	}
	out := []settings.Scope{}
	for _, l := range s.opts.SDK.SettingSources {
		out = append(out, settings.Scope(l))
	}
	return out
}

// memoryAllowed filters the memory files by the levels --setting-sources allows.
func (s *Session) memoryAllowed(files []memory.File) []memory.File {
	if !s.opts.SDK.LimitSources {
		return files
	}
	return slices.DeleteFunc(slices.Clone(files), func(f memory.File) bool {
		return f.Kind != memory.KindManaged && !s.sourceAllowed(string(f.Kind))
	})
}

// sdkFilter narrows the main thread's pool: to the built-in tools --tools names (MCP tools
// and tools the session adds stay), and without the tools a whole-tool deny rule forbids, so
// the model is never offered what it can never use.
func (s *Session) sdkFilter(p *tool.Pool) *tool.Pool {
	builtin := map[string]bool{}
	for _, t := range s.builtins {
		builtin[t.Name()] = true
	}
	denied := map[string]bool{}
	for _, r := range s.checker.Policy().Rules {
		if r.Behavior == permission.Deny && r.Specifier == "" && !strings.HasSuffix(r.Tool, "__*") {
			denied[r.Tool] = true
		}
	}
	limit := s.opts.SDK.LimitTools
	if !limit && len(denied) == 0 {
		return p
	}
	var keep []tool.Tool
	for _, t := range p.Tools() {
		name := t.Name()
		if denied[name] || (name == "Agent" && denied["Task"]) {
			continue
		}
		if limit && builtin[name] && name != structuredToolName && !slices.Contains(s.opts.SDK.BuiltinTools, name) &&
			!(name == "Agent" && slices.Contains(s.opts.SDK.BuiltinTools, "Task")) {
			continue
		}
		keep = append(keep, t)
	}
	return tool.Assemble(keep, nil)
}

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
func (t structuredOutput) InputSchema() json.RawMessage         { return t.s.opts.SDK.JSONSchema }
func (t structuredOutput) ReadOnly(json.RawMessage) bool        { return true }
func (t structuredOutput) ConcurrencySafe(json.RawMessage) bool { return true }
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

// beginRun clears the state of the previous run's SDK options.
func (s *Session) beginRun(prompt string) {
	s.sdk.mu.Lock()
	s.sdk.structured, s.sdk.reminders, s.sdk.prompt, s.sdk.turn = nil, 0, prompt, uuid.NewString()
	s.sdk.mu.Unlock()
}

// currentTurn names the Send in progress.
func (s *Session) currentTurn() string {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.turn
}

// dirUpdate is the permission update that adds dir to the working directories.
func dirUpdate(dir string) []permission.Update {
	return []permission.Update{{Type: permission.UpdateAddDirectories, Directories: []string{dir}, Destination: permission.DestinationSession}}
}

// currentPrompt is the prompt of the Send in progress.
func (s *Session) currentPrompt() string {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.prompt
}

// checkRun is the main agent's own loop.Check: the run ends once the structured answer is
// given, or too many answers missed the schema. (The budget is every agent's: budgetCheck.)
func (s *Session) checkRun(out *loop.Outcome) (string, bool) {
	if len(s.opts.SDK.JSONSchema) == 0 {
		return "", false
	}
	s.sdk.mu.Lock()
	answer, reminders := s.sdk.structured, s.sdk.reminders
	s.sdk.mu.Unlock()
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

// budgetCheck ends the run of any agent — the main one, a subagent, a teammate — once the
// session has cost --max-budget-usd: what every agent's requests cost is counted as each
// response arrives, so children that overspend stop, and so does the turn that waits for
// them.
func (s *Session) budgetCheck(out *loop.Outcome) (string, bool) {
	max := s.opts.SDK.MaxBudgetUSD
	if max <= 0 {
		return "", false
	}
	if _, spent, _, _ := s.spend.ledger().Total(); spent >= max {
		out.Text = fmt.Sprintf("Reached the maximum budget of $%.4f", max)
		return loop.SubtypeMaxBudget, true
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
func (s *Session) structuredAnswer() json.RawMessage {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.structured
}

// thinking is the main agent's thinking setting for the next request.
func (s *Session) thinking() *provider.Thinking {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.thinking
}

// initialThinking turns the options into the first thinking setting.
func initialThinking(o SDKOptions) *provider.Thinking {
	switch {
	case o.ThinkingMode == "disabled":
		return nil
	case o.MaxThinkingTokens > 0:
		return &provider.Thinking{BudgetTokens: o.MaxThinkingTokens}
	}
	if b, ok := effort.Budget(o.Effort); ok {
		return &provider.Thinking{BudgetTokens: b}
	}
	if o.ThinkingMode != "" {
		b, _ := effort.Budget("medium")
		return &provider.Thinking{BudgetTokens: b}
	}
	return nil
}

// SetMaxThinkingTokens sets the thinking budget of the following requests; 0 turns thinking
// off (the SDK's setMaxThinkingTokens).
func (s *Session) SetMaxThinkingTokens(n int64) {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	if n <= 0 {
		s.sdk.thinking = nil
		return
	}
	s.sdk.thinking = &provider.Thinking{BudgetTokens: n}
}

// fallbackProvider sends a request again with the fallback model when the main model is
// overloaded or unavailable, once the retries gave up.
type fallbackProvider struct {
	p        provider.Provider
	fallback string
	notify   func(from, to string, err error)
}

func (f fallbackProvider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Event, error] {
	return func(yield func(provider.Event, error) bool) {
		streamed := false
		for ev, err := range f.p.Stream(ctx, req) {
			if err != nil && !streamed && req.Model != f.fallback && fallbackWorthy(err) && ctx.Err() == nil {
				f.notify(req.Model, f.fallback, err)
				again := *req
				again.Model = f.fallback
				for ev, err := range f.p.Stream(ctx, &again) {
					if !yield(ev, err) {
						return
					}
				}
				return
			}
			if _, ok := ev.(provider.Retrying); !ok && err == nil {
				streamed = true
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// fallbackWorthy says a failure is the model's, not the request's: overloaded, unavailable,
// unknown model.
func fallbackWorthy(err error) bool {
	var se *provider.StatusError
	if errors.As(err, &se) {
		switch se.StatusCode {
		case 404, 500, 502, 503, 529:
			return true
		}
		return false
	}
	return false
}

// wrapFallback puts the fallback model around the session's provider.
func (s *Session) wrapFallback() {
	fb := s.opts.SDK.FallbackModel
	if fb == "" {
		return
	}
	s.opts.Provider = fallbackProvider{p: s.opts.Provider, fallback: fb, notify: func(from, to string, err error) {
		s.logger.Warn("model unavailable; using the fallback model", "model", from, "fallback", to, "err", err)
		s.emit(event.Notice{Level: "warn", Text: fmt.Sprintf("%s failed (%v); this request went to the fallback model %s", from, err, to)})
	}}
}

// resumeAt drops the resumed history after the assistant message ResumeSessionAt names.
func (s *Session) resumeAt(ctx context.Context) error {
	at := s.opts.SDK.ResumeSessionAt
	if at == "" {
		return nil
	}
	s.mu.Lock()
	idx := slices.Index(s.uuids, at)
	if idx < 0 {
		s.mu.Unlock()
		return fmt.Errorf("--resume-session-at %s: no such message in the resumed session", at)
	}
	s.history, s.uuids = s.history[:idx+1:idx+1], s.uuids[:idx+1:idx+1]
	s.mu.Unlock()
	if s.transcript != nil {
		if err := s.transcript.Rewind(ctx, at); err != nil {
			return fmt.Errorf("--resume-session-at: %w", err)
		}
	}
	return nil
}

// ToggleMCP switches an MCP server off or on for the following requests (mcp_toggle): off,
// its process is stopped (before ToggleMCP returns), its tools are no longer offered and its
// status reads disabled; on, it starts again and ToggleMCP waits for it to connect. A server
// that is on but failed is reconnected.
func (s *Session) ToggleMCP(ctx context.Context, name string, enabled bool) error {
	if s.mcp == nil {
		return fmt.Errorf("no MCP server named %q", name)
	}
	if _, ok := s.mcp.Config(name); !ok {
		return fmt.Errorf("no MCP server named %q", name)
	}
	if enabled {
		return s.mcp.Enable(ctx, name)
	}
	return s.mcp.Disable(ctx, name)
}

// WorkingDirs returns the directories the main agent may work in, the first being its own.
func (s *Session) WorkingDirs() []string { return s.checker.Policy().Dirs }

// hookEvents turns hook runs into events for the caller (stream-json's hook lines).
func (s *Session) hookEvents(id string, ev hooks.Event, res hooks.Result, done bool) {
	if !done {
		s.emit(event.HookStarted{HookID: id, Name: res.Command, Event: string(ev)})
		return
	}
	outcome := "success"
	switch {
	case errors.Is(res.Err, context.Canceled):
		outcome = "cancelled"
	case res.Err != nil || res.ExitCode != 0:
		outcome = "error"
	}
	s.emit(event.HookResponse{HookID: id, Name: res.Command, Event: string(ev), Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode, Outcome: outcome})
}
