package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/control"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/telemetry"
)

// stdioPromptTool is the --permission-prompt-tool value with which the Agent SDK asks to
// answer permission questions itself, over the control protocol.
const stdioPromptTool = "stdio"

// runControl serves the Agent SDK's control protocol on stdin and stdout
// (--input-format stream-json): the session opens once initialize has said what it needs.
func (a *app) runControl(ctx context.Context, cmd *cobra.Command, f *runFlags) error {
	if f.outputFormat != "stream-json" {
		return usageError{fmt.Errorf("--input-format stream-json needs --output-format stream-json, not %s", f.outputFormat)}
	}
	base, err := a.headlessOptions(cmd, f)
	if err != nil {
		return err
	}
	var tel *telemetry.Exporter
	defer func() { a.closeTelemetry(ctx, tel) }()
	err = control.Run(ctx, control.Config{
		In: a.std.In, Out: a.std.Out,
		Open: func(ctx context.Context, init *control.Init) (control.Session, error) {
			opts, err := withInit(base, init)
			if err != nil {
				return nil, err
			}
			opts.Traceparent = func(toolUseID string) string { return tel.Traceparent(toolUseID) }
			sess, err := session.New(ctx, opts)
			if err != nil {
				return nil, err
			}
			if tel, err = a.startTelemetry(ctx, f, sess.ID()); err != nil {
				sess.Close()
				return nil, err
			}
			return controlSession{sess, tel}, nil
		},
		Render:         a.streamOptions(f),
		PromptStdio:    f.mcp.permissionPromptTool == stdioPromptTool,
		Notices:        f.sdk.ignoredNotices(cmd),
		Version:        Version,
		APIKeySource:   control.APIKeySource(a.getenv),
		WaitBackground: !f.noWait,
		SessionState:   a.getenv("CLAUDE_CODE_SDK_READS_SESSION_STATE") == "1",
		Logger:         a.logger,
	})
	if err == control.ErrTurnFailed {
		return exitCodeError{code: exitError}
	}
	return err
}

// controlSession adapts a session to the control protocol's optional interfaces where their
// types differ; everything else is the session's own.
type controlSession struct {
	*session.Session
	tel *telemetry.Exporter
}

// Send is the session's, seen by telemetry when it is on.
func (s controlSession) Send(ctx context.Context, prompt string) iter.Seq2[event.Event, error] {
	return observedTurn(s.tel, prompt, s.Session.Send(ctx, prompt))
}

func (s controlSession) ContextUsage(ctx context.Context) control.ContextUsage {
	u := s.Session.ContextUsage(ctx)
	out := control.ContextUsage{Window: u.Window, Model: u.Model}
	for _, p := range u.Parts {
		out.Categories = append(out.Categories, control.ContextCategory{ID: p.ID, Name: p.Name, Tokens: p.Tokens, Kind: p.Kind})
	}
	for _, m := range u.Memory {
		out.Memory = append(out.Memory, control.MemoryUsage{Path: m.Path, Type: m.Kind, Tokens: m.Tokens})
	}
	return out
}

func (s controlSession) EffectiveSettings() (json.RawMessage, []control.SettingsSource) {
	eff, files := s.Session.EffectiveSettings()
	var out []control.SettingsSource
	for _, f := range files {
		out = append(out, control.SettingsSource{Source: f.Scope, Path: f.Path})
	}
	return eff, out
}

// streamOptions are the stream-json renderer's options from the flags.
func (a *app) streamOptions(f *runFlags) render.StreamOptions {
	return render.StreamOptions{
		IncludePartial: f.sdk.includePartial, ReplayUserMessages: f.sdk.replayUserMessages, IncludeHookEvents: f.sdk.includeHookEvents,
		Version: Version, APIKeySource: control.APIKeySource(a.getenv),
	}
}

// withInit shapes the session by what the SDK's initialize request carried.
func withInit(opts session.Options, init *control.Init) (session.Options, error) {
	if init.SystemPrompt != nil {
		opts.SystemPrompt = *init.SystemPrompt
	}
	if init.AppendSystemPrompt != "" {
		opts.AppendSystemPrompt = strings.TrimSpace(opts.AppendSystemPrompt + "\n\n" + init.AppendSystemPrompt)
	}
	if len(init.Agents) > 0 {
		merged, err := mergeAgents(opts.Agents, init.Agents)
		if err != nil {
			return opts, err
		}
		opts.Agents = merged
	}
	if len(init.JSONSchema) > 0 {
		opts.SDK.JSONSchema = init.JSONSchema
	}
	opts.SDK.HookCallbacks, opts.SDK.CallHook = init.Hooks, init.CallHook
	if init.Asker != nil {
		opts.Asker = init.Asker
	}
	opts.MCP.Transports = init.SDKServers
	// The SDK may add servers later (mcp_set_servers), even to a session that starts with none.
	opts.MCP.Dynamic = true
	// The SDK answers MCP servers' questions through its onElicitation callback (it declines
	// when the program registered none).
	opts.MCP.Elicit = init.Elicit
	if init.MCPConfig != "" {
		opts.MCP.Configs = append(opts.MCP.Configs, init.MCPConfig)
	}
	if init.Settings != "" {
		opts.SettingsArgs = append(opts.SettingsArgs, init.Settings)
	}
	opts.SettingsFlags.DisallowedTools = append(opts.SettingsFlags.DisallowedTools, init.DisallowedTools...)
	for _, p := range init.Plugins {
		opts.Plugins = append(opts.Plugins, plugin.DirSpec{Path: p.Path, Kind: plugin.OriginSDK, NoMCP: p.SkipMCP})
	}
	return opts, nil
}

// mergeAgents joins --agents JSON and initialize's agents; initialize's win by name.
func mergeAgents(flag string, init json.RawMessage) (string, error) {
	all := map[string]json.RawMessage{}
	if flag != "" {
		if err := json.Unmarshal([]byte(flag), &all); err != nil {
			return "", usageError{fmt.Errorf("--agents is not a JSON object of agent definitions: %w", err)}
		}
	}
	var extra map[string]json.RawMessage
	if err := json.Unmarshal(init, &extra); err != nil {
		return "", fmt.Errorf("initialize agents: %w", err)
	}
	for k, v := range extra {
		all[k] = v
	}
	b, err := json.Marshal(all)
	return string(b), err
}

// sdkOptions turns the Agent SDK's flags into session options.
func (a *app) sdkOptions(cmd *cobra.Command, f *runFlags) (session.SDKOptions, error) {
	s := &f.sdk
	o := session.SDKOptions{
		SettingSources: s.sources(), BuiltinTools: s.builtinTools(cmd), LimitTools: cmd.Flags().Changed("tools") && s.tools != "default",
		MaxBudgetUSD: s.maxBudgetUSD, FallbackModel: s.fallbackModel, ResumeSessionAt: s.resumeSessionAt,
		Effort: s.effort, ThinkingMode: s.thinking, MaxThinkingTokens: s.maxThinkingTokens,
		SetupTrigger: s.setupTrigger(),
	}
	o.LimitSources = s.settingSourcesSet
	if s.jsonSchema != "" {
		var schema map[string]any
		if err := json.Unmarshal([]byte(s.jsonSchema), &schema); err != nil {
			return o, usageError{fmt.Errorf("--json-schema is not a JSON schema object: %w", err)}
		}
		o.JSONSchema = json.RawMessage(s.jsonSchema)
	}
	if s.resumeSessionAt != "" && f.resume == "" {
		return o, usageError{fmt.Errorf("--resume-session-at needs --resume")}
	}
	return o, nil
}
