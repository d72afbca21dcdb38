// Package sessionhooks fires the hook events that have one place each in a session's life:
// SessionStart and Setup when it opens, InstructionsLoaded for each memory file, UserPromptSubmit
// and UserPromptExpansion for a prompt, MessageDisplay for each message shown, Stop and
// StopFailure when a turn ends, CwdChanged, DirectoryAdded, PostCompact, FileChanged for a
// watched file, and PermissionRequest and Notification before a permission question. The
// tool and permission events of each call fire in the permission gate.
//
// Each event's input carries what every hook is told (session id, transcript, directory,
// permission mode: [Dispatcher.Input]); what hooks answer goes back the way that event's
// answers go — notices to the user, context to the prompt, a decision to the caller. What it
// needs of the session it names in [Config]: the package knows no session.
package sessionhooks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
)

// Config is what a Dispatcher needs. Hooks is required; a nil function reads as empty (an
// absent id, no one to tell).
type Config struct {
	// Hooks runs the session's hooks as they stand at each call.
	Hooks hooks.EventRunner
	// SessionID, TranscriptPath and PermissionMode are told to every hook, as they are at
	// the call.
	SessionID, TranscriptPath, PermissionMode func() string
	// Cwd is the session's working directory now.
	Cwd func() string
	// Emit shows an event to the caller of the Send in progress, if any.
	Emit func(event.Event)
	// Keep holds a notice for the next Send: what hooks say while the session opens, before
	// anyone reads its events.
	Keep func(event.Notice)
	// Turn names the Send in progress (MessageDisplay's turn_id).
	Turn func() string
	// WorkingDirs are the session's working directories (the permission suggestions of a
	// PermissionRequest).
	WorkingDirs func() []string
	// Watch adds paths hooks asked to be told about (SessionStart's and CwdChanged's
	// watchPaths) to the session's watched files; FileChanged fires for them.
	Watch func(paths []string)
}

// Dispatcher fires a session's hook events. It is safe for concurrent use as far as its
// Config's functions are.
type Dispatcher struct{ c Config }

// New returns the dispatcher of c.
func New(c Config) *Dispatcher {
	str := func(f *func() string) {
		if *f == nil {
			*f = func() string { return "" }
		}
	}
	str(&c.SessionID)
	str(&c.TranscriptPath)
	str(&c.PermissionMode)
	str(&c.Cwd)
	str(&c.Turn)
	if c.Emit == nil {
		c.Emit = func(event.Event) {}
	}
	if c.Keep == nil {
		c.Keep = func(event.Notice) {}
	}
	if c.WorkingDirs == nil {
		c.WorkingDirs = func() []string { return nil }
	}
	if c.Watch == nil {
		c.Watch = func([]string) {}
	}
	return &Dispatcher{c: c}
}

// Input fills in what every hook event carries: the session's id and transcript, the
// directory cwd, the permission mode.
func (d *Dispatcher) Input(cwd string, in hooks.Input) hooks.Input {
	in.SessionID = d.c.SessionID()
	in.TranscriptPath = d.c.TranscriptPath()
	in.Cwd = cwd
	in.PermissionMode = d.c.PermissionMode()
	return in
}

// run fires ev with in completed for the session's directory now.
func (d *Dispatcher) run(ctx context.Context, ev hooks.Event, in hooks.Input) hooks.Outcome {
	return d.c.Hooks.Run(ctx, ev, d.Input(d.c.Cwd(), in))
}

// show emits what the hooks of an event said, notices and system messages alike.
func (d *Dispatcher) show(out hooks.Outcome) {
	for _, n := range append(out.Notices, out.SystemMessages...) {
		d.c.Emit(event.Notice{Level: "info", Text: n})
	}
}

// keep holds what the hooks of an event said for the next Send.
func (d *Dispatcher) keep(texts []string) {
	for _, n := range texts {
		d.c.Keep(event.Notice{Level: "info", Text: n})
	}
}

// SessionStart runs the Setup hooks of trigger (keel --init, --maintenance; none when empty)
// and then the SessionStart hooks of source (startup, resume) in dir, the directory the
// session opened in. It returns what they add to the first prompt; their notices wait for
// the first Send, and the paths they ask to watch are watched.
func (d *Dispatcher) SessionStart(ctx context.Context, dir, trigger, source string) (context []string) {
	context = d.Setup(ctx, dir, trigger)
	out := d.c.Hooks.Run(ctx, hooks.SessionStart, d.Input(dir, hooks.Input{Source: source}))
	d.keep(out.Notices)
	d.c.Watch(out.WatchPaths)
	return append(context, out.AdditionalContext...)
}

// Setup runs the Setup hooks of trigger (none when empty) in dir; what they add joins the
// first prompt, what they say waits for the first Send.
func (d *Dispatcher) Setup(ctx context.Context, dir, trigger string) []string {
	if trigger == "" {
		return nil
	}
	out := d.c.Hooks.Run(ctx, hooks.Setup, d.Input(dir, hooks.Input{Trigger: trigger}))
	d.keep(append(out.Notices, out.SystemMessages...))
	return out.AdditionalContext
}

// InstructionsLoaded tells the InstructionsLoaded hooks about each memory file put in the
// prompt for reason (session_start, …), in dir.
func (d *Dispatcher) InstructionsLoaded(ctx context.Context, dir string, files []memory.File, reason string) {
	for _, f := range files {
		out := d.c.Hooks.Run(ctx, hooks.InstructionsLoaded, d.Input(dir, hooks.Input{Extra: map[string]any{
			"file_path": f.Path, "memory_type": f.Kind.SDKType(), "load_reason": reason, "globs": f.Globs,
		}}))
		d.keep(append(out.Notices, out.SystemMessages...))
	}
}

// UserPromptSubmit runs the UserPromptSubmit hooks for prompt; emit shows their notices in
// the Send the prompt opens. A block refuses the prompt; otherwise the context they add is
// returned, to join it.
func (d *Dispatcher) UserPromptSubmit(ctx context.Context, prompt string, emit func(event.Event)) ([]string, error) {
	out := d.run(ctx, hooks.UserPromptSubmit, hooks.Input{Prompt: prompt})
	for _, n := range out.Notices {
		emit(event.Notice{Level: "info", Text: n})
	}
	if out.Decision == hooks.DecisionBlock {
		return nil, errors.New("prompt blocked by a UserPromptSubmit hook: " + out.Reason)
	}
	return out.AdditionalContext, nil
}

// PromptExpansion runs the UserPromptExpansion hooks for the /command prompt expanded to
// text (source is where the command came from): a block refuses the prompt, added context
// joins the text returned.
func (d *Dispatcher) PromptExpansion(ctx context.Context, prompt, text, source string) (string, error) {
	name, args, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(prompt), "/"), " ")
	out := d.run(ctx, hooks.UserPromptExpansion, hooks.Input{Prompt: prompt, Extra: map[string]any{
		"expansion_type": "slash_command", "command_name": name, "command_args": args, "command_source": source,
	}})
	d.show(out)
	if out.Decision == hooks.DecisionBlock {
		reason := out.Reason
		if reason == "" {
			reason = "blocked by a UserPromptExpansion hook"
		}
		return "", errors.New("/" + name + " blocked by a UserPromptExpansion hook: " + reason)
	}
	for _, c := range out.AdditionalContext {
		text += "\n\n" + c
	}
	return text, nil
}

// MessageDisplay runs the MessageDisplay hooks for a main-agent message about to be shown; a
// hook's displayContent replaces the text shown (the history keeps what the model said).
func (d *Dispatcher) MessageDisplay(ctx context.Context, e event.AssistantMessage) event.AssistantMessage {
	text := e.Message.TextOf()
	if text == "" || e.Origin.AgentID != "" {
		return e
	}
	out := d.run(ctx, hooks.MessageDisplay, hooks.Input{Extra: map[string]any{
		"turn_id": d.c.Turn(), "message_id": e.RequestID, "index": 0, "final": true, "delta": text,
	}})
	if out.DisplayContent == nil {
		return e
	}
	m := e.Message.Clone()
	var blocks []message.Block
	replaced := false
	for _, b := range m.Content {
		if b.Type == message.TypeText {
			if !replaced {
				blocks = append(blocks, message.Text(*out.DisplayContent))
				replaced = true
			}
			continue
		}
		blocks = append(blocks, b)
	}
	m.Content = blocks
	e.Message = m
	return e
}

// CheckStop runs the Stop hooks when the main agent ends its turn: a block keeps it going,
// with the hook's reason as what it is told ([loop] asks this of its stop check).
func (d *Dispatcher) CheckStop(ctx context.Context, _ message.Message, active bool) string {
	out := d.run(ctx, hooks.Stop, hooks.Input{StopHookActive: active})
	if out.Decision != hooks.DecisionBlock {
		return ""
	}
	if out.Reason == "" {
		return "A Stop hook asked you to continue."
	}
	return out.Reason
}

// StopFailure runs the StopFailure hooks when a turn ended because the model request failed
// (not for an interrupt), with the last thing the model said in history.
func (d *Dispatcher) StopFailure(ctx context.Context, runErr error, history []message.Message) {
	if runErr == nil || errors.Is(runErr, loop.ErrInterrupted) || errors.Is(runErr, context.Canceled) {
		return
	}
	in := hooks.Input{Extra: map[string]any{"error": FailureKind(runErr), "error_details": runErr.Error()}}
	if last := lastAssistantText(history); last != "" {
		in.Extra["last_assistant_message"] = last
	}
	d.run(context.WithoutCancel(ctx), hooks.StopFailure, in)
}

// FailureKind classifies a failed turn in the Agent SDK's SDKAssistantMessageError terms.
func FailureKind(err error) string {
	var se *provider.StatusError
	if errors.As(err, &se) {
		switch {
		case se.StatusCode == 401 || se.StatusCode == 403:
			return "authentication_failed"
		case se.StatusCode == 429:
			return "rate_limit"
		case se.StatusCode == 529:
			return "overloaded"
		case se.StatusCode == 404:
			return "model_not_found"
		case se.StatusCode == 400:
			return "invalid_request"
		case se.StatusCode >= 500:
			return "server_error"
		}
	}
	return "unknown"
}

func lastAssistantText(history []message.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == message.RoleAssistant {
			return history[i].TextOf()
		}
	}
	return ""
}

// CwdChanged runs the CwdChanged hooks when a turn moved the main agent from before to
// after; the paths they ask to watch are watched.
func (d *Dispatcher) CwdChanged(ctx context.Context, before, after string) {
	if before == after || after == "" {
		return
	}
	out := d.c.Hooks.Run(context.WithoutCancel(ctx), hooks.CwdChanged, d.Input(after, hooks.Input{Extra: map[string]any{"old_cwd": before, "new_cwd": after}}))
	d.show(out)
	d.c.Watch(out.WatchPaths)
}

// DirectoryAdded tells the DirectoryAdded hooks that dir became a working directory
// (/add-dir).
func (d *Dispatcher) DirectoryAdded(ctx context.Context, dir string) {
	d.show(d.run(ctx, hooks.DirectoryAdded, hooks.Input{Source: "slash_command", Extra: map[string]any{"directory": dir}}))
}

// PostCompact tells the PostCompact hooks the summary the history now starts from.
func (d *Dispatcher) PostCompact(ctx context.Context, trigger, summary string) {
	d.show(d.run(ctx, hooks.PostCompact, hooks.Input{Trigger: trigger, Extra: map[string]any{"compact_summary": summary}}))
}

// FileChanged tells the FileChanged hooks that a watched file changed (kind: change, add,
// unlink); it returns more paths they ask to watch.
func (d *Dispatcher) FileChanged(ctx context.Context, file, kind string) []string {
	return d.run(ctx, hooks.FileChanged, hooks.Input{Extra: map[string]any{"file_path": file, "event": kind}}).WatchPaths
}

// PermissionRequest runs the PermissionRequest hooks before a question is put: a hook may
// answer it (allow, with a rewritten input and permission updates, or deny). ok is false
// when no hook decided.
func (d *Dispatcher) PermissionRequest(ctx context.Context, r permission.AskRequest) (ans permission.Answer, ok bool) {
	input := r.Request.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	out := d.run(ctx, hooks.PermissionRequest, hooks.Input{
		ToolName: r.Request.Tool, ToolInput: input, ToolUseID: r.Request.ToolUseID,
		Extra: map[string]any{"permission_suggestions": permission.Suggest(r, d.c.WorkingDirs())},
	})
	d.show(out)
	switch out.Decision {
	case hooks.DecisionAllow:
		ans := permission.AllowOnce()
		ans.UpdatedInput = out.UpdatedInput
		ups, err := permission.ParseUpdates(out.UpdatedPermissions)
		if err != nil {
			d.c.Emit(event.Notice{Level: "warn", Text: "PermissionRequest hook: " + err.Error() + "; the call is allowed without them"})
		}
		ans.Permissions = ups
		return ans, true
	case hooks.DecisionBlock:
		reason := out.Reason
		if reason == "" {
			reason = "denied by a PermissionRequest hook"
		}
		ans := permission.DenyAnswer(reason)
		ans.Interrupt = out.Interrupt
		return ans, true
	}
	return permission.Answer{}, false
}

// PermissionPrompt runs the Notification hooks before a permission question about tool is
// put, so a user away from the terminal can be told that keel waits for them.
func (d *Dispatcher) PermissionPrompt(ctx context.Context, tool string) {
	d.run(ctx, hooks.Notification, hooks.Input{
		Message: "keel needs your permission to use " + tool, NotificationType: "permission_prompt",
	})
}

// Ran turns a hook's start (done false) and end into events for the caller: stream-json's
// hook_started and hook_response lines. It is the hooks' OnRun.
func (d *Dispatcher) Ran(id string, ev hooks.Event, res hooks.Result, done bool) {
	if !done {
		d.c.Emit(event.HookStarted{HookID: id, Name: res.Command, Event: string(ev)})
		return
	}
	outcome := "success"
	switch {
	case errors.Is(res.Err, context.Canceled):
		outcome = "cancelled"
	case res.Err != nil || res.ExitCode != 0:
		outcome = "error"
	}
	d.c.Emit(event.HookResponse{HookID: id, Name: res.Command, Event: string(ev), Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode, Outcome: outcome})
}
