package session

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settingsedit"
	"github.com/keel-dev/keel/internal/transcript"
)

// This file wires the session's settings as a controlling program reads and changes them
// (the Agent SDK's control requests); the edits and their layering are settingsedit's.

// Config returns the session's settings and permission rules.
func (s *Session) Config() *settingsedit.Configuration { return s.config }

// configuration is the session's settingsedit.Configuration, once its settings and checker
// are built: the ConfigChange hooks may refuse a change, and applied settings switch the
// session's mode and model.
func (c *configWiring) configuration() *settingsedit.Configuration {
	s := c.s
	return settingsedit.New(settingsedit.Options{
		Settings: s.settings, Rules: s.checker, ProjectDir: s.projectDir, Home: s.opts.Home, Cwd: s.opts.Cwd,
		ConfigChange: func(ctx context.Context, source, label string) error {
			out := s.hooks.Run(ctx, hooks.ConfigChange, s.hookd.Input(s.Cwd(), hooks.Input{Source: source, Extra: map[string]any{"file_path": label}}))
			if out.Decision == hooks.DecisionBlock {
				return fmt.Errorf("settings change refused by a ConfigChange hook: %s", out.Reason)
			}
			return nil
		},
		SetMode:  s.SetPermissionMode,
		SetModel: s.switches.SetModel,
	})
}

// SetPermissionMode switches the main agent's mode for the next calls.
func (s *Session) SetPermissionMode(mode string) error {
	m, err := permission.ParseMode(mode)
	if err != nil {
		return err
	}
	s.checker.SetMode(m)
	s.persist.recordMetadata(context.Background(), transcript.TypeMode, string(m))
	return nil
}
