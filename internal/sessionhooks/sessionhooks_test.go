package sessionhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/sessionhooks"
)

// fakeHooks answers each event with its canned outcome and records what it was asked.
type fakeHooks struct {
	mu    sync.Mutex
	out   map[hooks.Event]hooks.Outcome
	calls []call
}

type call struct {
	ev hooks.Event
	in hooks.Input
}

func (f *fakeHooks) Run(_ context.Context, ev hooks.Event, in hooks.Input) hooks.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{ev, in})
	return f.out[ev]
}

func (f *fakeHooks) asked(ev hooks.Event) []hooks.Input {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hooks.Input
	for _, c := range f.calls {
		if c.ev == ev {
			out = append(out, c.in)
		}
	}
	return out
}

// world is a dispatcher with everything it tells recorded.
type world struct {
	h       *fakeHooks
	d       *sessionhooks.Dispatcher
	mode    string
	emitted []event.Event
	kept    []string
	watched []string
}

func newWorld(out map[hooks.Event]hooks.Outcome) *world {
	w := &world{h: &fakeHooks{out: out}, mode: "default"}
	w.d = sessionhooks.New(sessionhooks.Config{
		Hooks:          w.h,
		SessionID:      func() string { return "sess-1" },
		TranscriptPath: func() string { return "/t/sess-1.jsonl" },
		PermissionMode: func() string { return w.mode },
		Cwd:            func() string { return "/now" },
		Emit:           func(e event.Event) { w.emitted = append(w.emitted, e) },
		Keep:           func(n event.Notice) { w.kept = append(w.kept, n.Text) },
		Turn:           func() string { return "turn-7" },
		WorkingDirs:    func() []string { return []string{"/now"} },
		Watch:          func(p []string) { w.watched = append(w.watched, p...) },
	})
	return w
}

func (w *world) noticesEmitted() []string {
	var out []string
	for _, e := range w.emitted {
		if n, ok := e.(event.Notice); ok {
			out = append(out, n.Text)
		}
	}
	return out
}

// TestEveryHookIsToldTheSession: each event's input carries the session's id, transcript,
// directory and permission mode as they are when it fires.
func TestEveryHookIsToldTheSession(t *testing.T) {
	w := newWorld(nil)
	w.d.PostCompact(t.Context(), "manual", "sum")
	w.mode = "plan"
	w.d.DirectoryAdded(t.Context(), "/extra")
	got := w.h.calls
	if len(got) != 2 {
		t.Fatalf("calls %+v", got)
	}
	for i, want := range []string{"default", "plan"} {
		in := got[i].in
		if in.SessionID != "sess-1" || in.TranscriptPath != "/t/sess-1.jsonl" || in.Cwd != "/now" || in.PermissionMode != want {
			t.Errorf("call %d input %+v; want the session's id, transcript, /now and mode %s", i, in, want)
		}
	}
	if in := w.d.Input("/elsewhere", hooks.Input{Prompt: "p"}); in.Cwd != "/elsewhere" || in.Prompt != "p" || in.SessionID != "sess-1" {
		t.Errorf("Input = %+v", in)
	}
}

// TestSessionStartJoinsSetupAndStart: the Setup hooks run only for a trigger, before the
// SessionStart ones; what both add joins the first prompt in that order; what they say
// waits for the first Send (Setup's system messages too, SessionStart's notices only); the
// paths SessionStart asks for are watched. They run in the directory the session opened in.
func TestSessionStartJoinsSetupAndStart(t *testing.T) {
	out := map[hooks.Event]hooks.Outcome{
		hooks.Setup:        {AdditionalContext: []string{"setup ctx"}, Notices: []string{"setup note"}, SystemMessages: []string{"setup sys"}},
		hooks.SessionStart: {AdditionalContext: []string{"start ctx"}, Notices: []string{"start note"}, SystemMessages: []string{"start sys"}, WatchPaths: []string{".env"}},
	}
	w := newWorld(out)
	added := w.d.SessionStart(t.Context(), "/opened", "init", "startup")
	if !slices.Equal(added, []string{"setup ctx", "start ctx"}) {
		t.Errorf("added %q", added)
	}
	if !slices.Equal(w.kept, []string{"setup note", "setup sys", "start note"}) {
		t.Errorf("kept %q", w.kept)
	}
	if !slices.Equal(w.watched, []string{".env"}) {
		t.Errorf("watched %q", w.watched)
	}
	if s := w.h.asked(hooks.SessionStart); len(s) != 1 || s[0].Source != "startup" || s[0].Cwd != "/opened" {
		t.Errorf("SessionStart asked %+v", s)
	}
	if s := w.h.asked(hooks.Setup); len(s) != 1 || s[0].Trigger != "init" {
		t.Errorf("Setup asked %+v", s)
	}

	w = newWorld(out)
	if added := w.d.SessionStart(t.Context(), "/opened", "", "resume"); !slices.Equal(added, []string{"start ctx"}) || len(w.h.asked(hooks.Setup)) != 0 {
		t.Errorf("without a trigger: added %q, Setup asked %d times", added, len(w.h.asked(hooks.Setup)))
	}
}

// TestInstructionsLoadedNamesEachFile: one InstructionsLoaded run per memory file, with its
// path, the SDK's name of its kind and the reason.
func TestInstructionsLoadedNamesEachFile(t *testing.T) {
	w := newWorld(map[hooks.Event]hooks.Outcome{hooks.InstructionsLoaded: {SystemMessages: []string{"seen"}}})
	w.d.InstructionsLoaded(t.Context(), "/opened", []memory.File{{Path: "/p/CLAUDE.md", Kind: memory.KindProject}, {Path: "/h/CLAUDE.md", Kind: memory.KindUser}}, "session_start")
	asked := w.h.asked(hooks.InstructionsLoaded)
	if len(asked) != 2 {
		t.Fatalf("asked %d times", len(asked))
	}
	for i, want := range [][2]string{{"/p/CLAUDE.md", "Project"}, {"/h/CLAUDE.md", "User"}} {
		x := asked[i].Extra
		if x["file_path"] != want[0] || x["memory_type"] != want[1] || x["load_reason"] != "session_start" || asked[i].Cwd != "/opened" {
			t.Errorf("file %d: %+v", i, asked[i])
		}
	}
	if len(w.kept) != 2 {
		t.Errorf("kept %q", w.kept)
	}
}

// TestPromptHooksBlockOrAdd: UserPromptSubmit and UserPromptExpansion refuse a prompt with
// the hook's reason (or a default), or add their context.
func TestPromptHooksBlockOrAdd(t *testing.T) {
	w := newWorld(map[hooks.Event]hooks.Outcome{
		hooks.UserPromptSubmit:    {AdditionalContext: []string{"more"}, Notices: []string{"submitted"}},
		hooks.UserPromptExpansion: {AdditionalContext: []string{"extra"}, SystemMessages: []string{"expanded"}},
	})
	var shown []event.Event
	added, err := w.d.UserPromptSubmit(t.Context(), "hello", func(e event.Event) { shown = append(shown, e) })
	if err != nil || !slices.Equal(added, []string{"more"}) || len(shown) != 1 {
		t.Errorf("submit: added %q, err %v, shown %v", added, err, shown)
	}
	text, err := w.d.PromptExpansion(t.Context(), "/review  the diff", "Review it.", "project")
	if err != nil || text != "Review it.\n\nextra" {
		t.Errorf("expansion: %q, %v", text, err)
	}
	if x := w.h.asked(hooks.UserPromptExpansion)[0].Extra; x["command_name"] != "review" || x["command_args"] != " the diff" || x["command_source"] != "project" {
		t.Errorf("expansion told %+v", x)
	}
	if !slices.Equal(w.noticesEmitted(), []string{"expanded"}) {
		t.Errorf("emitted %q", w.noticesEmitted())
	}

	w = newWorld(map[hooks.Event]hooks.Outcome{
		hooks.UserPromptSubmit:    {Decision: hooks.DecisionBlock, Reason: "no secrets"},
		hooks.UserPromptExpansion: {Decision: hooks.DecisionBlock},
	})
	if _, err := w.d.UserPromptSubmit(t.Context(), "hello", func(event.Event) {}); err == nil || !strings.Contains(err.Error(), "no secrets") {
		t.Errorf("a blocked prompt: %v", err)
	}
	if _, err := w.d.PromptExpansion(t.Context(), "/deploy now", "Deploy.", "user"); err == nil || !strings.Contains(err.Error(), "/deploy blocked by a UserPromptExpansion hook") {
		t.Errorf("a blocked expansion: %v", err)
	}
}

// TestStopHooks: a Stop hook's block keeps the agent going with its reason (or a default);
// StopFailure runs for a failed request, classified, and not for an interrupt.
func TestStopHooks(t *testing.T) {
	w := newWorld(map[hooks.Event]hooks.Outcome{hooks.Stop: {Decision: hooks.DecisionBlock, Reason: "tests fail"}})
	var _ loop.StopChecker = w.d
	if got := w.d.CheckStop(t.Context(), message.Message{}, true); got != "tests fail" {
		t.Errorf("CheckStop = %q", got)
	}
	if in := w.h.asked(hooks.Stop)[0]; !in.StopHookActive {
		t.Error("stop_hook_active not passed on")
	}
	w = newWorld(map[hooks.Event]hooks.Outcome{hooks.Stop: {Decision: hooks.DecisionBlock}})
	if got := w.d.CheckStop(t.Context(), message.Message{}, false); got != "A Stop hook asked you to continue." {
		t.Errorf("CheckStop without a reason = %q", got)
	}
	if got := newWorld(nil).d.CheckStop(t.Context(), message.Message{}, false); got != "" {
		t.Errorf("CheckStop without a block = %q", got)
	}

	w = newWorld(nil)
	w.d.StopFailure(t.Context(), fmt.Errorf("turn: %w", loop.ErrInterrupted), nil)
	w.d.StopFailure(t.Context(), nil, nil)
	history := []message.Message{message.User(message.Text("q")), message.Assistant(message.Text("half an answer"))}
	w.d.StopFailure(t.Context(), fmt.Errorf("request: %w", &provider.StatusError{StatusCode: 429}), history)
	asked := w.h.asked(hooks.StopFailure)
	if len(asked) != 1 {
		t.Fatalf("StopFailure ran %d times; want once, not for an interrupt or success", len(asked))
	}
	if x := asked[0].Extra; x["error"] != "rate_limit" || x["last_assistant_message"] != "half an answer" {
		t.Errorf("StopFailure told %+v", x)
	}
	if k := sessionhooks.FailureKind(errors.New("x")); k != "unknown" {
		t.Errorf("FailureKind of a plain error = %q", k)
	}
}

// TestMessageDisplayReplacesTheShownText: a hook's displayContent replaces the message's
// text (all its text blocks become one), keeps its other blocks and leaves the original as
// it was; a subagent's message and an unanswered hook change nothing.
func TestMessageDisplayReplacesTheShownText(t *testing.T) {
	shown := "shown"
	w := newWorld(map[hooks.Event]hooks.Outcome{hooks.MessageDisplay: {DisplayContent: &shown}})
	orig := message.Assistant(message.Text("a"), message.Text("b"), message.ToolUse("tu1", "Read", json.RawMessage(`{}`)))
	got := w.d.MessageDisplay(t.Context(), event.AssistantMessage{Message: orig, RequestID: "req"})
	if len(got.Message.Content) != 2 || got.Message.Content[0].Text != "shown" || got.Message.Content[1].Type != message.TypeToolUse {
		t.Errorf("shown %+v", got.Message.Content)
	}
	if orig.TextOf() != "ab" {
		t.Errorf("the history's message changed: %q", orig.TextOf())
	}
	if x := w.h.asked(hooks.MessageDisplay)[0].Extra; x["turn_id"] != "turn-7" || x["message_id"] != "req" || x["delta"] != "ab" {
		t.Errorf("MessageDisplay told %+v", x)
	}
	sub := event.AssistantMessage{Message: orig, Origin: event.Origin{AgentID: "agent-1"}}
	if got := w.d.MessageDisplay(t.Context(), sub); got.Message.TextOf() != "ab" {
		t.Error("a subagent's message was replaced")
	}
}

// TestPermissionRequestHookAnswers: a hook allows (with a rewritten input) or denies (with
// an interrupt); with no decision the question goes on.
func TestPermissionRequestHookAnswers(t *testing.T) {
	req := permission.AskRequest{Request: permission.Request{Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`), ToolUseID: "tu"}}
	w := newWorld(map[hooks.Event]hooks.Outcome{hooks.PermissionRequest: {Decision: hooks.DecisionAllow, UpdatedInput: json.RawMessage(`{"command":"ls -a"}`)}})
	ans, ok := w.d.PermissionRequest(t.Context(), req)
	if !ok || ans.Behavior != permission.Allow || string(ans.UpdatedInput) != `{"command":"ls -a"}` {
		t.Errorf("allowed: %+v %v", ans, ok)
	}
	if in := w.h.asked(hooks.PermissionRequest)[0]; in.ToolName != "Bash" || in.ToolUseID != "tu" || in.Extra["permission_suggestions"] == nil {
		t.Errorf("told %+v", in)
	}
	w = newWorld(map[hooks.Event]hooks.Outcome{hooks.PermissionRequest: {Decision: hooks.DecisionBlock, Interrupt: true}})
	if ans, ok := w.d.PermissionRequest(t.Context(), req); !ok || ans.Behavior != permission.Deny || !ans.Interrupt || ans.Reason != "denied by a PermissionRequest hook" {
		t.Errorf("denied: %+v %v", ans, ok)
	}
	if _, ok := newWorld(nil).d.PermissionRequest(t.Context(), req); ok {
		t.Error("no decision answered the question")
	}
}

// TestRanBecomesEvents: a hook's start and end reach the caller as hook_started and
// hook_response, with the outcome named.
func TestRanBecomesEvents(t *testing.T) {
	w := newWorld(nil)
	w.d.Ran("h1", hooks.PreToolUse, hooks.Result{Command: "check.sh"}, false)
	w.d.Ran("h1", hooks.PreToolUse, hooks.Result{Command: "check.sh", ExitCode: 1}, true)
	w.d.Ran("h2", hooks.Stop, hooks.Result{Command: "s.sh", Err: context.Canceled}, true)
	w.d.Ran("h3", hooks.Stop, hooks.Result{Command: "ok.sh"}, true)
	if len(w.emitted) != 4 {
		t.Fatalf("emitted %v", w.emitted)
	}
	if s, ok := w.emitted[0].(event.HookStarted); !ok || s.HookID != "h1" || s.Event != string(hooks.PreToolUse) {
		t.Errorf("start %+v", w.emitted[0])
	}
	for i, want := range []string{"error", "cancelled", "success"} {
		if r, ok := w.emitted[i+1].(event.HookResponse); !ok || r.Outcome != want {
			t.Errorf("response %d: %+v; want %s", i, w.emitted[i+1], want)
		}
	}
}

// TestCwdChangedAndFileChanged: CwdChanged runs in the new directory only when it moved, and
// watches what it asks; FileChanged returns the paths its hooks add.
func TestCwdChangedAndFileChanged(t *testing.T) {
	w := newWorld(map[hooks.Event]hooks.Outcome{
		hooks.CwdChanged:  {WatchPaths: []string{"go.mod"}},
		hooks.FileChanged: {WatchPaths: []string{"go.sum"}},
	})
	w.d.CwdChanged(t.Context(), "/a", "/a")
	w.d.CwdChanged(t.Context(), "/a", "")
	w.d.CwdChanged(t.Context(), "/a", "/b")
	asked := w.h.asked(hooks.CwdChanged)
	if len(asked) != 1 || asked[0].Cwd != "/b" || asked[0].Extra["old_cwd"] != "/a" {
		t.Errorf("CwdChanged asked %+v", asked)
	}
	if !slices.Equal(w.watched, []string{"go.mod"}) {
		t.Errorf("watched %q", w.watched)
	}
	if more := w.d.FileChanged(t.Context(), "/b/go.mod", "change"); !slices.Equal(more, []string{"go.sum"}) {
		t.Errorf("FileChanged returned %q", more)
	}
}
