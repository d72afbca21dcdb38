// Package hooks runs the user's hook commands at the points of a session that Claude Code
// defines (PreToolUse, Stop, …), with Claude Code's settings shape, JSON on stdin, exit-code
// and JSON-output semantics, so existing hook scripts work unchanged.
//
// [New] compiles the hook groups of merged settings into a [Runner]; [Runner.Run] fires one
// event: the matching hooks run in parallel, each in its own process group with its timeout,
// and their answers are folded into one [Outcome] (the most restrictive decision wins) that
// also carries every hook's [Result] for the UI. Hooks from project-provided settings are
// skipped, with a notice, until the workspace is trusted.
package hooks

import (
	"path/filepath"
	"slices"

	"github.com/keel-dev/keel/internal/lazy"
)

// Event names a hook event, spelled as in settings files.
type Event string

// The events keel fires. Adding one: a constant here and a row in eventTable.
const (
	SessionStart     Event = "SessionStart"
	UserPromptSubmit Event = "UserPromptSubmit"
	PreToolUse       Event = "PreToolUse"
	PostToolUse      Event = "PostToolUse"
	PostToolBatch    Event = "PostToolBatch"
	Stop             Event = "Stop"
	SubagentStart    Event = "SubagentStart"
	SubagentStop     Event = "SubagentStop"
	TeammateIdle     Event = "TeammateIdle"
	TaskCreated      Event = "TaskCreated"
	TaskCompleted    Event = "TaskCompleted"
	WorktreeCreate   Event = "WorktreeCreate"
	WorktreeRemove   Event = "WorktreeRemove"
	PreCompact       Event = "PreCompact"
	SessionEnd       Event = "SessionEnd"
	Notification     Event = "Notification"

	PostToolUseFailure  Event = "PostToolUseFailure"
	StopFailure         Event = "StopFailure"
	PostCompact         Event = "PostCompact"
	PreModelSwitch      Event = "PreModelSwitch"
	PostModelSwitch     Event = "PostModelSwitch"
	PermissionRequest   Event = "PermissionRequest"
	PermissionDenied    Event = "PermissionDenied"
	Setup               Event = "Setup"
	ConfigChange        Event = "ConfigChange"
	InstructionsLoaded  Event = "InstructionsLoaded"
	CwdChanged          Event = "CwdChanged"
	FileChanged         Event = "FileChanged"
	DirectoryAdded      Event = "DirectoryAdded"
	UserPromptExpansion Event = "UserPromptExpansion"
	MessageDisplay      Event = "MessageDisplay"
	// PreSkillShellCommand fires before a skill's or command's "!" shell command runs; any
	// decision but allow keeps it from running.
	PreSkillShellCommand Event = "PreSkillShellCommand"

	// Elicitation fires when an MCP server asks the user for input; a hook may answer it.
	Elicitation Event = "Elicitation"
	// ElicitationResult fires with the answer before it goes back to the server; a hook may
	// change it.
	ElicitationResult Event = "ElicitationResult"
)

// eventSpec is how one event behaves.
type eventSpec struct {
	// matchOn picks the input field a group's matcher is tested against; nil means the event
	// has no matcher and every group runs.
	matchOn func(Input) string
	// canBlock: exit 2 or decision "block" stops what the event is about (the tool call, the
	// prompt, the stop). Elsewhere exit 2 is a non-blocking error shown to the user.
	canBlock bool
	// stdoutIsContext: plain stdout of a successful hook is context for the model.
	stdoutIsContext bool
	// stopHook: the input always carries stop_hook_active.
	stopHook bool
}

func byTool(in Input) string      { return in.ToolName }
func bySource(in Input) string    { return in.Source }
func byAgentType(in Input) string { return in.AgentType }
func byTrigger(in Input) string   { return in.Trigger }
func byType(in Input) string      { return in.NotificationType }
func byServer(in Input) string    { return in.MCPServerName }

// byFileName matches FileChanged on the changed file's base name, as Claude Code does.
func byFileName(in Input) string { return filepath.Base(byExtra("file_path")(in)) }

// byExtra matches on an event-specific input field carried in [Input.Extra].
func byExtra(key string) func(Input) string {
	return func(in Input) string {
		s, _ := in.Extra[key].(string)
		return s
	}
}

// eventTable is every event keel fires, one row each.
var eventTable = lazy.Value[map[Event]eventSpec]{New: func() map[Event]eventSpec {
	return map[Event]eventSpec{
		SessionStart:     {matchOn: bySource, stdoutIsContext: true},
		UserPromptSubmit: {canBlock: true, stdoutIsContext: true},
		PreToolUse:       {matchOn: byTool, canBlock: true},
		PostToolUse:      {matchOn: byTool, canBlock: true},
		PostToolBatch:    {canBlock: true},
		Stop:             {canBlock: true, stopHook: true},
		SubagentStart:    {matchOn: byAgentType, stdoutIsContext: true},
		SubagentStop:     {matchOn: byAgentType, canBlock: true, stopHook: true},
		TeammateIdle:     {canBlock: true},
		TaskCreated:      {canBlock: true},
		TaskCompleted:    {canBlock: true},
		WorktreeCreate:   {},
		WorktreeRemove:   {},
		PreCompact:       {matchOn: byTrigger},
		SessionEnd:       {},
		Notification:     {matchOn: byType},

		PostToolUseFailure:   {matchOn: byTool},
		StopFailure:          {matchOn: byExtra("error")},
		PostCompact:          {matchOn: byTrigger},
		PreModelSwitch:       {canBlock: true},
		PostModelSwitch:      {},
		PermissionRequest:    {matchOn: byTool, canBlock: true},
		PermissionDenied:     {matchOn: byTool},
		Setup:                {matchOn: byTrigger, stdoutIsContext: true},
		ConfigChange:         {matchOn: bySource, canBlock: true},
		InstructionsLoaded:   {matchOn: byExtra("load_reason")},
		CwdChanged:           {},
		FileChanged:          {matchOn: byFileName},
		DirectoryAdded:       {},
		UserPromptExpansion:  {matchOn: byExtra("command_name"), canBlock: true},
		MessageDisplay:       {},
		PreSkillShellCommand: {matchOn: byExtra("command_name"), canBlock: true},
		Elicitation:          {matchOn: byServer, canBlock: true},
		ElicitationResult:    {matchOn: byServer, canBlock: true},
	}
}}

// Events lists the events keel fires, sorted.
func Events() []Event {
	var out []Event
	for e := range eventTable.Get() {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}
