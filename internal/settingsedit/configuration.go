package settingsedit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
)

// Configuration is a session's settings and permission rules as a frontend or a controlling
// program (the Agent SDK's control requests) reads and changes them: the effective settings,
// permission answers persisted, settings written and layered over the running session. It
// holds what it needs: the settings, the permission rules, the directories the settings
// files are found by, and the session's ConfigChange hooks and mode and model switches as
// functions.
type Configuration struct {
	o Options
}

// Rules are the main agent's permission rules as a Configuration reads and changes them
// (permission.Checker).
type Rules interface {
	Policy() permission.Policy
	Apply(updates []permission.Update) error
	AddRules(rules ...permission.Rule)
}

// Options are what a Configuration is given by its session.
type Options struct {
	Settings *settings.Settings
	Rules    Rules
	// ProjectDir and Home find the settings files (see [File]); Cwd anchors the relative
	// path rules of settings applied at once.
	ProjectDir, Home, Cwd string
	// ConfigChange runs the ConfigChange hooks for a change from source (a file or a label);
	// an error refuses the change. Nil allows every change.
	ConfigChange func(ctx context.Context, source, label string) error
	// SetMode and SetModel switch the session's permission mode and model when applied
	// settings name one.
	SetMode  func(mode string) error
	SetModel func(model string)
}

// New returns the Configuration of a session.
func New(o Options) *Configuration { return &Configuration{o: o} }

// Settings returns the merged settings with where each value came from; treat it as
// read-only.
func (c *Configuration) Settings() *settings.Settings { return c.o.Settings }

// PermissionRules lists the main agent's allow, ask and deny rules, each with its source.
func (c *Configuration) PermissionRules() []permission.Rule { return c.o.Rules.Policy().Rules }

// ChangePermissions applies updates to the main agent from the next call on and writes those
// meant for a settings file there (see [Configuration.PersistPermissions]).
func (c *Configuration) ChangePermissions(updates []permission.Update) error {
	if err := c.o.Rules.Apply(updates); err != nil {
		return err
	}
	return c.PersistPermissions(updates)
}

// PersistPermissions writes the permission updates meant for a settings file there (see
// [File]); others are skipped.
func (c *Configuration) PersistPermissions(updates []permission.Update) error {
	return Persist(c.o.ProjectDir, c.o.Home, updates)
}

// EffectiveSettings returns the merged settings and each file that contributed.
func (c *Configuration) EffectiveSettings() (json.RawMessage, []Source) {
	var files []Source
	for _, f := range c.o.Settings.Files {
		if f.State == settings.FileLoaded {
			files = append(files, Source{Scope: string(f.Scope), Path: f.Path})
		}
	}
	b, err := json.Marshal(c.o.Settings.Effective())
	if err != nil {
		b = []byte("{}")
	}
	return b, files
}

// Source is one settings source that was read.
type Source struct{ Scope, Path string }

// ApplyFlagSettings layers settings over the command line's for the rest of the session:
// permission rules and the mode apply at once; the ConfigChange hooks hear of it.
func (c *Configuration) ApplyFlagSettings(ctx context.Context, raw json.RawMessage) error {
	return c.layerSettings(ctx, "--settings (apply_flag_settings)", raw, "policy_settings")
}

// UpdateSettings writes settings into the local or user settings file and applies them.
func (c *Configuration) UpdateSettings(ctx context.Context, destination string, raw json.RawMessage) error {
	path := File(destination, c.o.ProjectDir, c.o.Home)
	if path == "" {
		return fmt.Errorf("update settings: no %s file in this session", destination)
	}
	if err := Merge(path, raw); err != nil {
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
	if c.o.ConfigChange != nil {
		if err := c.o.ConfigChange(ctx, source, label); err != nil {
			return err
		}
	}
	rules, err := Read(raw, label, c.o.Cwd)
	if err != nil {
		return err
	}
	c.o.Rules.AddRules(rules.Rules...)
	if rules.Mode != "" && c.o.SetMode != nil {
		if err := c.o.SetMode(rules.Mode); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	if rules.Model != "" && c.o.SetModel != nil {
		c.o.SetModel(rules.Model)
	}
	return nil
}

// WorkingDirs returns the directories the main agent may work in, the first being its own.
func (c *Configuration) WorkingDirs() []string { return c.o.Rules.Policy().Dirs }
