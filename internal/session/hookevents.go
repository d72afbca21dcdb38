package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
)

// This file fires the hook events of the Agent SDK's list that have one place each in a
// session: InstructionsLoaded, Setup, UserPromptExpansion, PostCompact, StopFailure,
// CwdChanged, DirectoryAdded and MessageDisplay. The permission and tool events fire in the
// gate and the asker.

// instructionsLoaded tells the InstructionsLoaded hooks about each memory file in the prompt.
func (d *hookDispatch) instructionsLoaded(ctx context.Context, files []memory.File, reason string) {
	s := d.s
	for _, f := range files {
		out := s.hooks.Run(ctx, hooks.InstructionsLoaded, d.hookInput(s.opts.Cwd, hooks.Input{Extra: map[string]any{
			"file_path": f.Path, "memory_type": memoryType(f.Kind), "load_reason": reason, "globs": f.Globs,
		}}))
		d.noteHooks(out)
	}
}

// setupHooks runs the Setup hooks (keel --init, --maintenance); what they add joins the
// first prompt.
func (d *hookDispatch) setupHooks(ctx context.Context, trigger string) {
	s := d.s
	if trigger == "" {
		return
	}
	out := s.hooks.Run(ctx, hooks.Setup, d.hookInput(s.opts.Cwd, hooks.Input{Trigger: trigger}))
	d.noteHooks(out)
	s.startContext = append(s.startContext, out.AdditionalContext...)
}

// noteHooks keeps what hooks had to say for the first Send's notices.
func (d *hookDispatch) noteHooks(out hooks.Outcome) {
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range append(out.Notices, out.SystemMessages...) {
		s.notices = append(s.notices, event.Notice{Level: "info", Text: n})
	}
}

// promptExpansion runs the UserPromptExpansion hooks for a /command the prompt expanded to;
// a block refuses the prompt, additional context joins it.
func (d *hookDispatch) promptExpansion(ctx context.Context, prompt, expanded, source string) (string, error) {
	s := d.s
	name, args, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(prompt), "/"), " ")
	out := s.hooks.Run(ctx, hooks.UserPromptExpansion, d.hookInput(s.Cwd(), hooks.Input{Prompt: prompt, Extra: map[string]any{
		"expansion_type": "slash_command", "command_name": name, "command_args": args, "command_source": source,
	}}))
	for _, n := range append(out.Notices, out.SystemMessages...) {
		s.emit(event.Notice{Level: "info", Text: n})
	}
	if out.Decision == hooks.DecisionBlock {
		reason := out.Reason
		if reason == "" {
			reason = "blocked by a UserPromptExpansion hook"
		}
		return "", errors.New("/" + name + " blocked by a UserPromptExpansion hook: " + reason)
	}
	for _, c := range out.AdditionalContext {
		expanded += "\n\n" + c
	}
	return expanded, nil
}

// postCompact tells the PostCompact hooks the summary the history now starts from.
func (d *hookDispatch) postCompact(ctx context.Context, trigger, summary string) {
	s := d.s
	out := s.hooks.Run(ctx, hooks.PostCompact, d.hookInput(s.Cwd(), hooks.Input{Trigger: trigger, Extra: map[string]any{"compact_summary": summary}}))
	for _, n := range append(out.Notices, out.SystemMessages...) {
		s.emit(event.Notice{Level: "info", Text: n})
	}
}

// stopFailure runs the StopFailure hooks when a turn ends because the model request failed
// (not an interrupt).
func (d *hookDispatch) stopFailure(ctx context.Context, runErr error, history []message.Message) {
	s := d.s
	if runErr == nil || errors.Is(runErr, loop.ErrInterrupted) || errors.Is(runErr, context.Canceled) {
		return
	}
	in := hooks.Input{Extra: map[string]any{"error": failureKind(runErr), "error_details": runErr.Error()}}
	if last := lastAssistantText(history); last != "" {
		in.Extra["last_assistant_message"] = last
	}
	s.hooks.Run(context.WithoutCancel(ctx), hooks.StopFailure, d.hookInput(s.Cwd(), in))
}

// failureKind classifies a failed turn in the SDK's SDKAssistantMessageError terms.
func failureKind(err error) string {
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

// cwdChanged runs the CwdChanged hooks when a turn moved the main agent's directory.
func (d *hookDispatch) cwdChanged(ctx context.Context, before, after string) {
	s := d.s
	if before == after || after == "" {
		return
	}
	out := s.hooks.Run(context.WithoutCancel(ctx), hooks.CwdChanged, d.hookInput(after, hooks.Input{Extra: map[string]any{"old_cwd": before, "new_cwd": after}}))
	for _, n := range append(out.Notices, out.SystemMessages...) {
		s.emit(event.Notice{Level: "info", Text: n})
	}
	s.watchFiles(out.WatchPaths)
}

// addDirectory makes dir a working directory of the session (/add-dir DIR) and tells the
// DirectoryAdded hooks.
func (d *hookDispatch) addDirectory(ctx context.Context, dir string) (string, error) {
	s := d.s
	if dir == "" {
		return "", errors.New("/add-dir needs a directory")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.Cwd(), dir)
	}
	abs, err := resolveCwd(dir)
	if err != nil {
		return "", err
	}
	if err := s.checker.Apply(dirUpdate(abs)); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.state.AdditionalDirs = append(s.state.AdditionalDirs, abs)
	s.mu.Unlock()
	out := s.hooks.Run(ctx, hooks.DirectoryAdded, d.hookInput(s.Cwd(), hooks.Input{Source: "slash_command", Extra: map[string]any{"directory": abs}}))
	for _, n := range append(out.Notices, out.SystemMessages...) {
		s.emit(event.Notice{Level: "info", Text: n})
	}
	return abs, nil
}

// hookEvents turns hook runs into events for the caller (stream-json's hook lines).
func (d *hookDispatch) hookEvents(id string, ev hooks.Event, res hooks.Result, done bool) {
	s := d.s
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

// dirUpdate is the permission update that adds dir to the working directories.
func dirUpdate(dir string) []permission.Update {
	return []permission.Update{{Type: permission.UpdateAddDirectories, Directories: []string{dir}, Destination: permission.DestinationSession}}
}

// watchFiles adds paths (relative ones to the session's directory) to the watched files.
func (s *Session) watchFiles(paths []string) {
	s.watched.add(paths, watchHooks{logger: s.logger, cwd: s.Cwd, changed: func(file, kind string) []string {
		in := s.hookd.hookInput(s.Cwd(), hooks.Input{Extra: map[string]any{"file_path": file, "event": kind}})
		return s.hooks.Run(context.Background(), hooks.FileChanged, in).WatchPaths
	}})
}

// startHooks runs the SessionStart hooks; what they add joins the first prompt.
func (d *hookDispatch) startHooks(ctx context.Context, source string) {
	s := d.s
	d.setupHooks(ctx, s.opts.SDK.SetupTrigger)
	out := s.hooks.Run(ctx, hooks.SessionStart, d.hookInput(s.opts.Cwd, hooks.Input{Source: source}))
	for _, n := range out.Notices {
		s.notices = append(s.notices, event.Notice{Level: "info", Text: n})
	}
	s.startContext = append(s.startContext, out.AdditionalContext...)
	s.watchFiles(out.WatchPaths)
}

// submitPrompt runs the UserPromptSubmit hooks; a block refuses the prompt, and additional
// context joins it.
func (d *hookDispatch) submitPrompt(ctx context.Context, prompt string, sink *chanSink) ([]message.Block, error) {
	s := d.s
	out := s.hooks.Run(ctx, hooks.UserPromptSubmit, d.hookInput(s.Cwd(), hooks.Input{Prompt: prompt}))
	for _, n := range out.Notices {
		sink.Emit(event.Notice{Level: "info", Text: n})
	}
	if out.Decision == hooks.DecisionBlock {
		return nil, fmt.Errorf("prompt blocked by a UserPromptSubmit hook: %s", out.Reason)
	}
	blocks := append([]message.Block{message.Text(prompt)}, attachments(ctx)...)
	s.mu.Lock()
	extra := append(s.startContext, out.AdditionalContext...)
	s.startContext = nil
	s.mu.Unlock()
	for _, c := range extra {
		blocks = append(blocks, message.Text(c))
	}
	return blocks, nil
}

// permissionRequest runs the PermissionRequest hooks before a question is put: a hook may
// answer it (allow, with a rewritten input and permission updates, or deny). ok is false
// when no hook decided.
func (d *hookDispatch) permissionRequest(ctx context.Context, r permission.AskRequest) (permission.Answer, bool) {
	s := d.s
	input := r.Request.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	out := s.hooks.Run(ctx, hooks.PermissionRequest, d.hookInput(s.Cwd(), hooks.Input{
		ToolName: r.Request.Tool, ToolInput: input, ToolUseID: r.Request.ToolUseID,
		Extra: map[string]any{"permission_suggestions": permission.Suggest(r, s.config.WorkingDirs())},
	}))
	for _, n := range append(out.Notices, out.SystemMessages...) {
		s.emit(event.Notice{Level: "info", Text: n})
	}
	switch out.Decision {
	case hooks.DecisionAllow:
		ans := permission.AllowOnce()
		ans.UpdatedInput = out.UpdatedInput
		ups, err := permission.ParseUpdates(out.UpdatedPermissions)
		if err != nil {
			s.emit(event.Notice{Level: "warn", Text: "PermissionRequest hook: " + err.Error() + "; the call is allowed without them"})
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

// notifyingAsker runs the Notification hooks before a permission question is put, so a user
// away from the terminal can be told that keel waits for them.
type notifyingAsker struct {
	s     *Session
	inner permission.Asker
}

func (a notifyingAsker) Ask(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
	if a.s.sandboxAutoAllows(r) {
		return permission.AllowOnce(), nil
	}
	if ans, ok := a.s.hookd.permissionRequest(ctx, r); ok {
		return ans, nil
	}
	a.s.hooks.Run(ctx, hooks.Notification, a.s.hookd.hookInput(a.s.Cwd(), hooks.Input{
		Message: "keel needs your permission to use " + r.Request.Tool, NotificationType: "permission_prompt",
	}))
	return a.inner.Ask(ctx, r)
}
