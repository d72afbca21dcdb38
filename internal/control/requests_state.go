package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/keel-dev/keel/internal/lazy"
)

// The requests about the session's state: context usage, file rewind, tasks, settings,
// skills.

// ContextCategory is one part of the context window, as get_context_usage reports it.
type ContextCategory struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Tokens int64  `json:"tokens"`
	Kind   string `json:"kind"` // used, free, buffer, deferred
}

// ContextUsage is what the next request would carry, by part.
type ContextUsage struct {
	Categories []ContextCategory
	Window     int64
	Model      string
	Memory     []MemoryUsage
}

// MemoryUsage is one memory file's share.
type MemoryUsage struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Tokens int64  `json:"tokens"`
}

type contextUser interface {
	ContextUsage(ctx context.Context) ContextUsage
}

// categoryColors are the colours Claude Code's /context grid uses, which SDK UIs reuse.
var categoryColors = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"system_prompt": "promptBorder", "system_tools": "inactive", "mcp_tools": "cyan_FOR_SUBAGENTS_ONLY",
		"memory_files": "claude", "skills": "warning", "messages": "purple_FOR_SUBAGENTS_ONLY", "free_space": "promptBorder",
		"autocompact_buffer": "inactive",
	}
}}

func (c *controller) onGetContextUsage(ctx context.Context, _ json.RawMessage) (any, error) {
	u, ok := c.sess.(contextUser)
	if !ok {
		return nil, errors.New("get_context_usage: this session cannot measure its context")
	}
	cu := u.ContextUsage(ctx)
	type category struct {
		ContextCategory
		Color string `json:"color"`
	}
	var cats []category
	var total int64
	for _, cat := range cu.Categories {
		cats = append(cats, category{cat, categoryColors.Get()[cat.ID]})
		if cat.Kind == "used" {
			total += cat.Tokens
		}
	}
	pct := 0
	if cu.Window > 0 {
		pct = int(total * 100 / cu.Window)
	}
	memory := cu.Memory
	if memory == nil {
		memory = []MemoryUsage{}
	}
	return map[string]any{
		"categories": cats, "totalTokens": total, "maxTokens": cu.Window, "rawMaxTokens": cu.Window,
		"percentage": pct, "gridRows": [][]any{}, "model": cu.Model, "memoryFiles": memory, "mcpTools": []any{},
	}, nil
}

// fileRewinder is a session that can put files back as they were before a prompt.
type fileRewinder interface {
	RewindFiles(ctx context.Context, userMessageID string, dryRun bool) (changed []string, err error)
}

func (c *controller) onRewindFiles(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		UserMessageID string `json:"user_message_id"`
		DryRun        bool   `json:"dry_run"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.UserMessageID == "" {
		return nil, errors.New("rewind_files: want {\"user_message_id\": …}")
	}
	r, ok := c.sess.(fileRewinder)
	if !ok {
		return map[string]any{"canRewind": false, "error": "this session keeps no file history"}, nil
	}
	changed, err := r.RewindFiles(ctx, req.UserMessageID, req.DryRun)
	if err != nil {
		return map[string]any{"canRewind": false, "error": err.Error()}, nil
	}
	return map[string]any{"canRewind": true, "filesChanged": nonNil(changed)}, nil
}

// taskStopper is a session whose background tasks can be stopped.
type taskStopper interface {
	StopTask(ctx context.Context, id string) error
}

func (c *controller) onStopTask(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.TaskID == "" {
		return nil, errors.New("stop_task: want {\"task_id\": …}")
	}
	s, ok := c.sess.(taskStopper)
	if !ok {
		return nil, fmt.Errorf("stop_task: no task %q", req.TaskID)
	}
	if err := s.StopTask(ctx, req.TaskID); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// settingsSession is a session whose merged settings can be read and changed.
type settingsSession interface {
	// EffectiveSettings returns the merged settings and each source that contributed.
	EffectiveSettings() (effective json.RawMessage, sources []SettingsSource)
	// ApplyFlagSettings layers settings over the command line's for the rest of the session.
	ApplyFlagSettings(ctx context.Context, settings json.RawMessage) error
	// UpdateSettings writes settings into a file (localSettings or userSettings) and reloads.
	UpdateSettings(ctx context.Context, destination string, settings json.RawMessage) error
}

// SettingsSource is one settings source in get_settings' answer.
type SettingsSource struct {
	Source   string          `json:"source"`
	Path     string          `json:"path,omitempty"`
	Settings json.RawMessage `json:"settings"`
}

func (c *controller) settings() (settingsSession, error) {
	s, ok := c.sess.(settingsSession)
	if !ok {
		return nil, errors.New("this session cannot read or change its settings")
	}
	return s, nil
}

func (c *controller) onGetSettings(context.Context, json.RawMessage) (any, error) {
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	eff, sources := s.EffectiveSettings()
	if sources == nil {
		sources = []SettingsSource{}
	}
	return map[string]any{"effective": eff, "sources": sources}, nil
}

func (c *controller) onApplyFlagSettings(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Settings) == 0 {
		return nil, errors.New("apply_flag_settings: want {\"settings\": {…}}")
	}
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	if err := s.ApplyFlagSettings(ctx, req.Settings); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (c *controller) onUpdateSettings(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Source   string          `json:"source"`
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Settings) == 0 {
		return nil, errors.New("update_settings: want {\"source\": \"localSettings\"|\"userSettings\", \"settings\": {…}}")
	}
	if req.Source != "localSettings" && req.Source != "userSettings" {
		return nil, fmt.Errorf("update_settings: source %q is not one of localSettings, userSettings", req.Source)
	}
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	if err := s.UpdateSettings(ctx, req.Source, req.Settings); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// skillReloader is a session that can pick up skills changed on disk.
type skillReloader interface {
	ReloadSkills(ctx context.Context) error
}

func (c *controller) onReloadSkills(ctx context.Context, _ json.RawMessage) (any, error) {
	r, ok := c.sess.(skillReloader)
	if !ok {
		return nil, errors.New("reload_skills: this session cannot reload skills")
	}
	if err := r.ReloadSkills(ctx); err != nil {
		return nil, err
	}
	commands := slices.Clone(builtinCommands)
	if s, ok := c.sess.(skiller); ok {
		for _, sk := range s.Skills() {
			if sk.UserInvocable {
				commands = append(commands, slashCommand{Name: sk.Name, Description: sk.Description, ArgumentHint: sk.ArgumentHint})
			}
		}
	}
	return map[string]any{"commands": commands}, nil
}
