package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/lsp"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
)

// fakeTool is a tool the gate sees by name and read-only claim; the gate never calls it.
type fakeTool struct {
	name     string
	readOnly bool
}

func (t fakeTool) Name() string                         { return t.name }
func (t fakeTool) Description() string                  { return t.name }
func (t fakeTool) InputSchema() json.RawMessage         { return json.RawMessage(`{"type":"object"}`) }
func (t fakeTool) ReadOnly(json.RawMessage) bool        { return t.readOnly }
func (t fakeTool) ConcurrencySafe(json.RawMessage) bool { return t.readOnly }
func (t fakeTool) Call(context.Context, *tool.Env, json.RawMessage) tool.Result {
	return tool.Text("ran")
}

// hookRun is one event the gate fired.
type hookRun struct {
	ev hooks.Event
	in hooks.Input
}

// fakeHooks answers each event with a set outcome and records what it was given.
type fakeHooks struct {
	mu   sync.Mutex
	out  map[hooks.Event]hooks.Outcome
	runs []hookRun
}

func (h *fakeHooks) Run(_ context.Context, ev hooks.Event, in hooks.Input) hooks.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs = append(h.runs, hookRun{ev, in})
	return h.out[ev]
}

// ran returns the inputs of the runs of ev.
func (h *fakeHooks) ran(ev hooks.Event) []hooks.Input {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hooks.Input
	for _, r := range h.runs {
		if r.ev == ev {
			out = append(out, r.in)
		}
	}
	return out
}

// asker answers every question with answer and counts them.
type asker struct {
	mu     sync.Mutex
	answer permission.Answer
	asked  []permission.AskRequest
}

func (a *asker) Ask(_ context.Context, req permission.AskRequest) (permission.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req)
	return a.answer, nil
}

func (a *asker) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

// rig is a gate with fakes around it and what it emitted and recorded.
type rig struct {
	gate   *Gate
	hooks  *fakeHooks
	asker  *asker
	cfg    *Config
	mu     sync.Mutex
	events []event.Event
}

func (r *rig) emitted() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// newRig builds a gate whose checker has the policy of mode and rules (as "Behavior:rule"
// texts: "deny:Bash(rm:*)"); edit changes the config before the gate is built.
func newRig(t *testing.T, mode permission.Mode, rules []string, edit func(*Config)) *rig {
	t.Helper()
	var parsed []permission.Rule
	for _, text := range rules {
		b, rule, _ := strings.Cut(text, ":")
		behavior := map[string]permission.Behavior{"allow": permission.Allow, "ask": permission.Ask, "deny": permission.Deny}[b]
		r, err := permission.ParseRule(rule, behavior, permission.Source{Name: "test"})
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, r)
	}
	r := &rig{hooks: &fakeHooks{out: map[hooks.Event]hooks.Outcome{}}, asker: &asker{answer: permission.AllowOnce()}}
	checker := permission.New(permission.Config{Policy: permission.Policy{Mode: mode, Rules: parsed, Dirs: []string{t.TempDir()}},
		Asker: r.asker, Home: t.TempDir()})
	cfg := Config{Checker: checker, Hooks: r.hooks, Emit: func(e event.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, e)
	}}
	if edit != nil {
		edit(&cfg)
	}
	r.cfg = &cfg
	r.gate = New(cfg)
	return r
}

func bashCall(id, command string) *tool.Call {
	in, _ := json.Marshal(map[string]string{"command": command})
	return &tool.Call{ID: id, Name: "Bash", Input: in}
}

func env(cwd, agent string) *tool.Env {
	return &tool.Env{State: tool.State{Cwd: cwd}, AgentID: agent}
}

var bash = fakeTool{name: "Bash"}

func TestDeniedCallReturnsTheRefusalAndRecordsTheDenial(t *testing.T) {
	r := newRig(t, permission.ModeDefault, []string{"deny:Bash(rm:*)"}, nil)
	call := bashCall("t1", "rm -rf build")
	res, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, call)
	if ok || !res.IsError {
		t.Fatalf("denied call passed: ok=%v res=%+v", ok, res)
	}
	if !strings.HasPrefix(res.ResultText(), "Permission to use Bash was denied.") {
		t.Errorf("refusal = %q", res.ResultText())
	}
	if strings.Contains(res.ResultText(), "try this call again") {
		t.Errorf("refusal offers a retry no hook allowed: %q", res.ResultText())
	}
	if r.asker.count() != 0 {
		t.Errorf("a deny rule asked the user")
	}
	denials := r.gate.TakeDenials()
	if len(denials) != 1 || denials[0].ToolUseID != "t1" || denials[0].ToolName != "Bash" || denials[0].Reason == "" {
		t.Fatalf("denials = %+v", denials)
	}
	if again := r.gate.TakeDenials(); len(again) != 0 {
		t.Errorf("TakeDenials did not clear: %+v", again)
	}
	var emitted []event.PermissionDenied
	for _, e := range r.emitted() {
		if d, ok := e.(event.PermissionDenied); ok {
			emitted = append(emitted, d)
		}
	}
	if len(emitted) != 1 || emitted[0].ToolUseID != "t1" {
		t.Errorf("emitted denials = %+v", emitted)
	}
	ran := r.hooks.ran(hooks.PermissionDenied)
	if len(ran) != 1 || ran[0].ToolUseID != "t1" || ran[0].Extra["reason"] != denials[0].Reason {
		t.Errorf("PermissionDenied hooks ran with %+v, want the call and its reason", ran)
	}
}

func TestPermissionDeniedHookLetsTheModelRetry(t *testing.T) {
	r := newRig(t, permission.ModeDefault, []string{"deny:Bash(rm:*)"}, nil)
	r.hooks.out[hooks.PermissionDenied] = hooks.Outcome{Retry: true}
	res, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t1", "rm x"))
	if ok || !strings.HasSuffix(res.ResultText(), " You may try this call again.") {
		t.Errorf("ok=%v refusal=%q, want a refusal that offers a retry", ok, res.ResultText())
	}
}

func TestPreToolUseBlockStopsTheCall(t *testing.T) {
	for _, tc := range []struct{ reason, want string }{
		{"not on Fridays", "not on Fridays"},
		{"", "blocked by a PreToolUse hook"},
	} {
		r := newRig(t, permission.ModeDefault, []string{"allow:Bash"}, nil)
		r.hooks.out[hooks.PreToolUse] = hooks.Outcome{Decision: hooks.DecisionBlock, Reason: tc.reason}
		res, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t1", "ls"))
		if ok || !res.IsError || res.ResultText() != tc.want {
			t.Errorf("reason %q: ok=%v res=%q, want refused with %q", tc.reason, ok, res.ResultText(), tc.want)
		}
		if d := r.gate.TakeDenials(); len(d) != 1 || d[0].Reason != tc.want {
			t.Errorf("reason %q: denials = %+v", tc.reason, d)
		}
		// A hook's block is no permission refusal: the PermissionDenied hooks stay quiet.
		if ran := r.hooks.ran(hooks.PermissionDenied); len(ran) != 0 {
			t.Errorf("reason %q: PermissionDenied ran for a hook's block", tc.reason)
		}
	}
}

func TestPreToolUseRewrittenInputIsWhatIsCheckedAndRun(t *testing.T) {
	r := newRig(t, permission.ModeDefault, []string{"allow:Bash(ls:*)", "deny:Bash(rm:*)"}, nil)
	rewritten := json.RawMessage(`{"command":"ls -la"}`)
	r.hooks.out[hooks.PreToolUse] = hooks.Outcome{UpdatedInput: rewritten}
	call := bashCall("t1", "cat secret")
	if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, call); !ok {
		t.Fatalf("the rewritten, allowed call was refused")
	}
	if string(call.Input) != string(rewritten) {
		t.Errorf("call input = %s, want the hook's %s", call.Input, rewritten)
	}
	if r.asker.count() != 0 {
		t.Errorf("the original input (no rule) was asked about, not the rewritten one")
	}

	// Rewritten into a denied command, the call is refused.
	r.hooks.out[hooks.PreToolUse] = hooks.Outcome{UpdatedInput: json.RawMessage(`{"command":"rm -rf /"}`)}
	if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t2", "ls")); ok {
		t.Errorf("a call rewritten into a denied command ran")
	}
}

func TestHookAllowSkipsTheQuestionButNotADenyRule(t *testing.T) {
	r := newRig(t, permission.ModeDefault, []string{"deny:Bash(rm:*)"}, nil)
	r.hooks.out[hooks.PreToolUse] = hooks.Outcome{Decision: hooks.DecisionAllow}
	if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t1", "make")); !ok {
		t.Errorf("a hook's allow was asked about or refused")
	}
	if r.asker.count() != 0 {
		t.Errorf("a hook's allow still asked the user")
	}
	if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t2", "rm x")); ok {
		t.Errorf("a hook's allow overrode a deny rule")
	}
}

func TestHookAskAsksDespiteAnAllowRule(t *testing.T) {
	r := newRig(t, permission.ModeDefault, []string{"allow:Bash"}, nil)
	r.hooks.out[hooks.PreToolUse] = hooks.Outcome{Decision: hooks.DecisionAsk}
	r.asker.answer = permission.DenyAnswer("no thanks")
	res, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t1", "make"))
	if ok || !strings.Contains(res.ResultText(), "no thanks") {
		t.Errorf("ok=%v res=%q, want the user's refusal", ok, res.ResultText())
	}
	if r.asker.count() != 1 || r.asker.asked[0].ReasonType != "hook" || r.asker.asked[0].Reason != "a PreToolUse hook asks for approval" {
		t.Errorf("asked %+v, want one question from the hook", r.asker.asked)
	}
}

func TestSkillGrantPassesWithoutAsking(t *testing.T) {
	var grantedFor []string
	r := newRig(t, permission.ModeDefault, nil, func(c *Config) {
		c.Granted = func(agentID string, req permission.Request) (permission.Decision, bool) {
			grantedFor = append(grantedFor, agentID+":"+req.Command)
			return permission.Decision{Behavior: permission.Allow}, req.Command == "make"
		}
	})
	if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), "a1"), bash, bashCall("t1", "make")); !ok || r.asker.count() != 0 {
		t.Errorf("a granted call was refused or asked (ok=%v, asked %d)", ok, r.asker.count())
	}
	if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), "a1"), bash, bashCall("t2", "curl x")); !ok || r.asker.count() != 1 {
		t.Errorf("a call no grant covers was not asked (ok=%v, asked %d)", ok, r.asker.count())
	}
	if want := []string{"a1:make", "a1:curl x"}; !slices.Equal(grantedFor, want) {
		t.Errorf("grants consulted for %q, want %q", grantedFor, want)
	}
}

func TestAnInterruptingRefusalStopsOnlyTheMainAgentsRun(t *testing.T) {
	interrupts := 0
	r := newRig(t, permission.ModeDefault, nil, func(c *Config) { c.Interrupt = func() { interrupts++ } })
	r.asker.answer = permission.Answer{Behavior: permission.Deny, Reason: "stop", Interrupt: true}
	r.gate.Before(context.Background(), env(t.TempDir(), "sub"), bash, bashCall("t1", "make"))
	if interrupts != 0 {
		t.Errorf("a subagent's refusal interrupted the main run")
	}
	r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t2", "make"))
	if interrupts != 1 {
		t.Errorf("interrupts = %d, want 1 for the main agent's refusal", interrupts)
	}
}

type validatorFunc func(t tool.Tool, input json.RawMessage) error

func (f validatorFunc) Validate(t tool.Tool, input json.RawMessage) error { return f(t, input) }

func TestApprovedRewriteMustFitTheSchema(t *testing.T) {
	r := newRig(t, permission.ModeDefault, nil, func(c *Config) {
		c.Validator = validatorFunc(func(_ tool.Tool, in json.RawMessage) error {
			if strings.Contains(string(in), "bad") {
				return errors.New("command: wrong type")
			}
			return nil
		})
	})
	r.asker.answer = permission.Answer{Behavior: permission.Allow, UpdatedInput: json.RawMessage(`{"command":"bad"}`)}
	res, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, bashCall("t1", "make"))
	if ok || !strings.HasPrefix(res.ResultText(), "InputValidationError: the approved input of Bash") {
		t.Errorf("ok=%v res=%q, want the approved input refused", ok, res.ResultText())
	}
	if d := r.gate.TakeDenials(); len(d) != 1 {
		t.Errorf("denials = %+v, want the invalid approval recorded", d)
	}

	good := json.RawMessage(`{"command":"make test"}`)
	r.asker.answer = permission.Answer{Behavior: permission.Allow, UpdatedInput: good}
	call := bashCall("t2", "make")
	if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), bash, call); !ok || string(call.Input) != string(good) {
		t.Errorf("ok=%v input=%s, want the approver's input", ok, call.Input)
	}
}

// fakeLSP records what the gate told it.
type fakeLSP struct {
	before, after, touched []string
	late                   []lsp.FileDiagnostics
}

func (f *fakeLSP) Touch(path string)         { f.touched = append(f.touched, path) }
func (f *fakeLSP) Before(agent, path string) { f.before = append(f.before, agent+":"+path) }
func (f *fakeLSP) After(_ context.Context, agent, path string) lsp.Report {
	f.after = append(f.after, agent+":"+path)
	return lsp.Report{Note: "gopls is not installed"}
}
func (f *fakeLSP) Late(string) []lsp.FileDiagnostics { return f.late }

func TestFileEditBookkeeping(t *testing.T) {
	var tracked, touched []string
	var unrecoverable []string
	servers := &fakeLSP{}
	r := newRig(t, permission.ModeDefault, []string{"allow:Write", "allow:Bash"}, func(c *Config) {
		c.TrackEdit = func(p string) { tracked = append(tracked, p) }
		c.Touched = func(p []string) { touched = append(touched, p...) }
		c.Unrecoverable = func(name, desc string) { unrecoverable = append(unrecoverable, name+" "+desc) }
		c.LSP = servers
	})
	cwd := t.TempDir()
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		t.Fatal(err)
	}
	write := fakeTool{name: "Write"}
	call := &tool.Call{ID: "t1", Name: "Write", Input: json.RawMessage(`{"file_path":"a.go","content":"package a"}`)}
	writeEnv := env(cwd, "") // After is given the env Before was, as the batch runner does
	if _, ok := r.gate.Before(context.Background(), writeEnv, write, call); !ok {
		t.Fatal("an allowed Write was refused")
	}
	want := filepath.Join(real, "a.go")
	if !slices.Equal(tracked, []string{want}) {
		t.Errorf("tracked %q, want %q kept for rewind", tracked, want)
	}
	if !slices.Equal(touched, []string{"a.go"}) {
		t.Errorf("touched %q, want the call's path", touched)
	}
	if !slices.Equal(servers.before, []string{":" + want}) {
		t.Errorf("language servers told before %q", servers.before)
	}
	res := tool.Text("wrote a.go")
	r.gate.After(context.Background(), writeEnv, write, *call, &res)
	if !slices.Equal(servers.after, []string{":" + want}) || !strings.Contains(res.ResultText(), "(gopls is not installed)") {
		t.Errorf("after the edit: servers asked %q, result %q", servers.after, res.ResultText())
	}
	if len(unrecoverable) != 0 {
		t.Errorf("a Write was recorded as unrecoverable: %q", unrecoverable)
	}

	// A read-only call changes nothing to keep; a writing Bash call that worked is a change
	// rewind cannot undo.
	tracked = nil
	read := &tool.Call{ID: "t2", Name: "Read", Input: json.RawMessage(`{"file_path":"a.go"}`)}
	if _, ok := r.gate.Before(context.Background(), env(cwd, ""), fakeTool{name: "Read", readOnly: true}, read); !ok || len(tracked) != 0 {
		t.Errorf("a Read: ok=%v, tracked %q", ok, tracked)
	}
	build := bashCall("t3", "make")
	out := tool.Text("ok")
	r.gate.After(context.Background(), env(cwd, ""), bash, *build, &out)
	if want := []string{"Bash " + string(build.Input)}; !slices.Equal(unrecoverable, want) {
		t.Errorf("unrecoverable %q, want %q", unrecoverable, want)
	}
	failed := tool.Errorf("exit 1")
	r.gate.After(context.Background(), env(cwd, ""), bash, *bashCall("t4", "make"), &failed)
	if len(unrecoverable) != 1 {
		t.Errorf("a failed Bash call was recorded as a change: %q", unrecoverable)
	}
}

func TestAfterRunsPostToolUseWithTheResult(t *testing.T) {
	r := newRig(t, permission.ModeDefault, []string{"allow:Bash"}, func(c *Config) {
		c.HookInput = func(cwd string, in hooks.Input) hooks.Input {
			in.SessionID, in.Cwd = "s1", cwd
			return in
		}
	})
	r.hooks.out[hooks.PreToolUse] = hooks.Outcome{AdditionalContext: []string{"from before"}}
	r.hooks.out[hooks.PostToolUse] = hooks.Outcome{AdditionalContext: []string{"from after"}, SystemMessages: []string{"formatted"}}
	cwd := t.TempDir()
	call := bashCall("t1", "make")
	if _, ok := r.gate.Before(context.Background(), env(cwd, "a1"), bash, call); !ok {
		t.Fatal("allowed call refused")
	}
	res := tool.Text("built")
	r.gate.After(context.Background(), env(cwd, "a1"), bash, *call, &res)
	ran := r.hooks.ran(hooks.PostToolUse)
	if len(ran) != 1 {
		t.Fatalf("PostToolUse ran %d times", len(ran))
	}
	in := ran[0]
	var response map[string]any
	if err := json.Unmarshal(in.ToolResponse, &response); err != nil || response["content"] != "built" || response["is_error"] != false {
		t.Errorf("tool_response = %s (%v), want the result's text", in.ToolResponse, err)
	}
	if in.ToolUseID != "t1" || in.AgentID != "a1" || in.SessionID != "s1" || in.Cwd != cwd || string(in.ToolInput) != string(call.Input) {
		t.Errorf("PostToolUse input = %+v", in)
	}
	if got := res.ResultText(); got != "built\nfrom before\nfrom after" && got != "builtfrom beforefrom after" {
		t.Errorf("result = %q, want the hooks' context after the output", got)
	}
	if len(res.Content) != 3 {
		t.Errorf("result blocks = %d, want the output and both hooks' context", len(res.Content))
	}
	var notices []string
	for _, e := range r.emitted() {
		if n, ok := e.(event.Notice); ok {
			notices = append(notices, n.Text)
		}
	}
	if !slices.Equal(notices, []string{"formatted"}) {
		t.Errorf("notices = %q, want the hook's system message", notices)
	}

	// A failed call runs PostToolUseFailure instead, with the error; a blocking
	// PostToolUse-style reason reaches the model.
	r.hooks.out[hooks.PostToolUseFailure] = hooks.Outcome{Decision: hooks.DecisionBlock, Reason: "look at the log"}
	failed := tool.Errorf("exit 2")
	r.gate.After(context.Background(), env(cwd, ""), bash, *bashCall("t2", "make"), &failed)
	fails := r.hooks.ran(hooks.PostToolUseFailure)
	if len(fails) != 1 || fails[0].Extra["error"] != "exit 2" || len(r.hooks.ran(hooks.PostToolUse)) != 1 {
		t.Errorf("PostToolUseFailure ran with %+v", fails)
	}
	if !strings.Contains(failed.ResultText(), "look at the log") {
		t.Errorf("failed result = %q, want the hook's reason", failed.ResultText())
	}
}

func TestStructuredOutputIsTheHooksToolResponse(t *testing.T) {
	r := newRig(t, permission.ModeDefault, nil, nil)
	res := tool.Result{Content: tool.Text("3 files").Content, Output: map[string]int{"numFiles": 3}}
	r.gate.After(context.Background(), env(t.TempDir(), ""), fakeTool{name: "Glob", readOnly: true},
		tool.Call{ID: "t1", Name: "Glob", Input: json.RawMessage(`{}`)}, &res)
	if ran := r.hooks.ran(hooks.PostToolUse); len(ran) != 1 || string(ran[0].ToolResponse) != `{"numFiles":3}` {
		t.Errorf("PostToolUse ran with %+v, want the structured output", ran)
	}
}

func exitPlan(id, plan string) *tool.Call {
	in, _ := json.Marshal(builtin.ExitPlanModeInput{Plan: plan})
	return &tool.Call{ID: id, Name: builtin.ExitPlanModeName, Input: in}
}

func TestExitPlanMode(t *testing.T) {
	exit := fakeTool{name: builtin.ExitPlanModeName, readOnly: true}
	t.Run("outside plan mode", func(t *testing.T) {
		r := newRig(t, permission.ModeDefault, nil, nil)
		res, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), exit, exitPlan("t1", "the plan"))
		if ok || !strings.HasPrefix(res.ResultText(), "You are not in plan mode.") || r.asker.count() != 0 {
			t.Errorf("ok=%v res=%q asked=%d, want refused without a question", ok, res.ResultText(), r.asker.count())
		}
	})
	t.Run("refused plan", func(t *testing.T) {
		r := newRig(t, permission.ModePlan, nil, nil)
		r.asker.answer = permission.DenyAnswer("too broad")
		res, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), exit, exitPlan("t1", "1. rewrite it all"))
		if ok || !strings.Contains(res.ResultText(), "stay in plan mode. too broad") || !strings.Contains(res.ResultText(), "1. rewrite it all") {
			t.Errorf("ok=%v res=%q, want the refusal with the plan handed back", ok, res.ResultText())
		}
		if r.cfg.Checker.Policy().Mode != permission.ModePlan {
			t.Errorf("a refused plan left plan mode")
		}
	})
	t.Run("approved plan", func(t *testing.T) {
		var recorded []string
		r := newRig(t, permission.ModePlan, nil, func(c *Config) { c.RecordMode = func(m string) { recorded = append(recorded, m) } })
		if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), ""), exit, exitPlan("t1", "the plan")); !ok {
			t.Fatal("an approved plan was refused")
		}
		if mode := r.cfg.Checker.Policy().Mode; mode != permission.ModeDefault {
			t.Errorf("mode after approval = %q, want default", mode)
		}
		if !slices.Equal(recorded, []string{"default"}) {
			t.Errorf("recorded modes %q", recorded)
		}
		var status []string
		for _, e := range r.emitted() {
			if s, ok := e.(event.Status); ok {
				status = append(status, s.PermissionMode)
			}
		}
		if !slices.Equal(status, []string{"default"}) {
			t.Errorf("status events %q, want the new mode announced", status)
		}
	})
	t.Run("a subagent's approved plan is not the session's mode", func(t *testing.T) {
		var recorded []string
		r := newRig(t, permission.ModePlan, nil, func(c *Config) { c.RecordMode = func(m string) { recorded = append(recorded, m) } })
		if _, ok := r.gate.Before(context.Background(), env(t.TempDir(), "sub"), exit, exitPlan("t1", "the plan")); !ok {
			t.Fatal("an approved plan was refused")
		}
		if len(recorded) != 0 || r.cfg.Checker.Policy().Mode != permission.ModeDefault {
			t.Errorf("recorded %q, mode %q: want the subagent's checker out of plan mode, nothing recorded", recorded, r.cfg.Checker.Policy().Mode)
		}
	})
}

func TestWebFetchAsksForAnExplicitRule(t *testing.T) {
	r := newRig(t, permission.ModeDefault, []string{"allow:WebFetch(domain:example.com)"}, nil)
	fetch := fakeTool{name: "WebFetch", readOnly: true}
	e := env(t.TempDir(), "")
	call := &tool.Call{ID: "t1", Name: "WebFetch", Input: json.RawMessage(`{"url":"https://example.com/a"}`)}
	if _, ok := r.gate.Before(context.Background(), e, fetch, call); !ok {
		t.Fatal("allowed WebFetch refused")
	}
	if e.Explicit == nil || !e.Explicit() {
		t.Errorf("Explicit unset or false for a host a rule names")
	}
	e2 := env(t.TempDir(), "")
	other := &tool.Call{ID: "t2", Name: "WebFetch", Input: json.RawMessage(`{"url":"https://other.example/a"}`)}
	if _, ok := r.gate.Before(context.Background(), e2, fetch, other); !ok {
		t.Fatal("read-only WebFetch refused")
	}
	if e2.Explicit == nil || e2.Explicit() {
		t.Errorf("Explicit true for a host no rule names")
	}
}
