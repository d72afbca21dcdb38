package keel

import (
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/settings"
)

// CheckSettings returns the error [New] would for a settings file of opts that cannot be read
// or parsed (naming file, line and column), without opening anything: a frontend reports it
// before asking whether to trust the workspace, not after. Nil with IgnoreSettingsErrors.
func CheckSettings(opts Options) error {
	return session.CheckSettings(session.Options{
		Cwd:  opts.Cwd,
		Home: homeOf(opts),
		SettingsFlags: settings.Flags{
			Model: opts.Model, PermissionMode: opts.PermissionMode,
			AllowedTools: opts.AllowedTools, DisallowedTools: opts.DisallowedTools, AddDirs: opts.AddDirs,
		},
		SettingsArgs:         opts.Settings,
		IgnoreSettingsErrors: opts.IgnoreSettingsErrors,
	})
}
