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

// PersistPermissions writes the permission updates meant for a settings file there (see
// settingsedit.File); others are skipped.
func (s *Session) PersistPermissions(updates []permission.Update) error {
	return settingsedit.Persist(s.projectDir, s.opts.Home, updates)
}

// EffectiveSettings returns the merged settings and each file that contributed.
func (s *Session) EffectiveSettings() (json.RawMessage, []SettingsFile) {
	var files []SettingsFile
	for _, f := range s.settings.Files {
		if f.State == settings.FileLoaded {
			files = append(files, SettingsFile{Scope: string(f.Scope), Path: f.Path})
		}
	}
	b, err := json.Marshal(s.settings.Effective())
	if err != nil {
		b = []byte("{}")
	}
	return b, files
}

// SettingsFile is one settings source that was read.
type SettingsFile struct{ Scope, Path string }

// ApplyFlagSettings layers settings over the command line's for the rest of the session:
// permission rules and the mode apply at once; the ConfigChange hooks hear of it.
func (s *Session) ApplyFlagSettings(ctx context.Context, raw json.RawMessage) error {
	return s.layerSettings(ctx, "--settings (apply_flag_settings)", raw, "policy_settings")
}

// UpdateSettings writes settings into the local or user settings file and applies them.
func (s *Session) UpdateSettings(ctx context.Context, destination string, raw json.RawMessage) error {
	path := settingsedit.File(destination, s.projectDir, s.opts.Home)
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
	return s.layerSettings(ctx, path, raw, source)
}

// layerSettings applies the permission part of a settings object now, after the
// ConfigChange hooks allowed it.
func (s *Session) layerSettings(ctx context.Context, label string, raw json.RawMessage, source string) error {
	out := s.hooks.Run(ctx, hooks.ConfigChange, s.hookd.hookInput(s.Cwd(), hooks.Input{Source: source, Extra: map[string]any{"file_path": label}}))
	if out.Decision == hooks.DecisionBlock {
		return fmt.Errorf("settings change refused by a ConfigChange hook: %s", out.Reason)
	}
	c, err := settingsedit.Read(raw, label, s.opts.Cwd)
	if err != nil {
		return err
	}
	s.checker.AddRules(c.Rules...)
	if c.Mode != "" {
		if err := s.SetPermissionMode(c.Mode); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	if c.Model != "" {
		s.SetModel(c.Model)
	}
	return nil
}

// WorkingDirs returns the directories the main agent may work in, the first being its own.
func (s *Session) WorkingDirs() []string { return s.checker.Policy().Dirs }
