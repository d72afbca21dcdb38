package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/settingsedit"
)

// This file holds the session's settings as a controlling program reads and changes them
// (the Agent SDK's control requests): the effective settings, permission answers persisted,
// settings written and layered over the running session. The file edits are settingsedit's.

// Configuration is the session's settings and permission rules as a frontend or a
// controlling program reads and changes them. It holds what it needs: the settings, the
// permission checker, the directories the settings files are found by, and the session's
// ConfigChange hooks and mode and model switches as functions.
type Configuration struct {
	settings              *settings.Settings
	checker               *permission.Checker
	projectDir, home, cwd string
	// configChange runs the ConfigChange hooks for a change from source (a file or a
	// label); an error refuses the change.
	configChange func(ctx context.Context, source, label string) error
	setMode      func(mode string) error
	setModel     func(model string)
}

// Config returns the session's settings and permission rules.
func (s *Session) Config() *Configuration { return s.config }

// newConfiguration is the session's Configuration, once its settings and checker are built.
func (s *Session) newConfiguration() *Configuration {
	return &Configuration{
		settings: s.settings, checker: s.checker, projectDir: s.projectDir, home: s.opts.Home, cwd: s.opts.Cwd,
		configChange: func(ctx context.Context, source, label string) error {
			out := s.hooks.Run(ctx, hooks.ConfigChange, s.hookd.hookInput(s.Cwd(), hooks.Input{Source: source, Extra: map[string]any{"file_path": label}}))
			if out.Decision == hooks.DecisionBlock {
				return fmt.Errorf("settings change refused by a ConfigChange hook: %s", out.Reason)
			}
			return nil
		},
		setMode:  s.SetPermissionMode,
		setModel: s.switches.SetModel,
	}
}

// Settings returns the merged settings with where each value came from; treat it as
// read-only.
func (c *Configuration) Settings() *settings.Settings { return c.settings }

// PermissionRules lists the main agent's allow, ask and deny rules, each with its source.
func (c *Configuration) PermissionRules() []permission.Rule { return c.checker.Policy().Rules }

// ChangePermissions applies updates to the main agent from the next call on and writes those
// meant for a settings file there (see [Configuration.PersistPermissions]).
func (c *Configuration) ChangePermissions(updates []permission.Update) error {
	if err := c.checker.Apply(updates); err != nil {
		return err
	}
	return c.PersistPermissions(updates)
}

// PersistPermissions writes the permission updates meant for a settings file there (see
// settingsedit.File); others are skipped.
func (c *Configuration) PersistPermissions(updates []permission.Update) error {
	return settingsedit.Persist(c.projectDir, c.home, updates)
}

// EffectiveSettings returns the merged settings and each file that contributed.
func (c *Configuration) EffectiveSettings() (json.RawMessage, []SettingsFile) {
	var files []SettingsFile
	for _, f := range c.settings.Files {
		if f.State == settings.FileLoaded {
			files = append(files, SettingsFile{Scope: string(f.Scope), Path: f.Path})
		}
	}
	b, err := json.Marshal(c.settings.Effective())
	if err != nil {
		b = []byte("{}")
	}
	return b, files
}

// SettingsFile is one settings source that was read.
type SettingsFile struct{ Scope, Path string }

// ApplyFlagSettings layers settings over the command line's for the rest of the session:
// permission rules and the mode apply at once; the ConfigChange hooks hear of it.
func (c *Configuration) ApplyFlagSettings(ctx context.Context, raw json.RawMessage) error {
	return c.layerSettings(ctx, "--settings (apply_flag_settings)", raw, "policy_settings")
}

// UpdateSettings writes settings into the local or user settings file and applies them.
func (c *Configuration) UpdateSettings(ctx context.Context, destination string, raw json.RawMessage) error {
	path := settingsedit.File(destination, c.projectDir, c.home)
	if path == "" {
		return fmt.Errorf("update settings: no %s file in this session", destination)
	}
	if err := settingsedit.Merge(path, raw); err != nil {
		return err
	}
	source := "local_settings"
	if destination == permission.DestinationUserSettings {
		source = "user_settings"
	}
	return c.layerSettings(ctx, path, raw, source)
}

// layerSettings applies the permission part of a settings object now, after the
// ConfigChange hooks allowed it.
func (c *Configuration) layerSettings(ctx context.Context, label string, raw json.RawMessage, source string) error {
	if err := c.configChange(ctx, source, label); err != nil {
		return err
	}
	rules, err := settingsedit.Read(raw, label, c.cwd)
	if err != nil {
		return err
	}
	c.checker.AddRules(rules.Rules...)
	if rules.Mode != "" {
		if err := c.setMode(rules.Mode); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	if rules.Model != "" {
		c.setModel(rules.Model)
	}
	return nil
}

// WorkingDirs returns the directories the main agent may work in, the first being its own.
func (c *Configuration) WorkingDirs() []string { return c.checker.Policy().Dirs }
