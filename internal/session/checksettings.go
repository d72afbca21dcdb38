package session

import (
	"path/filepath"

	"github.com/keel-dev/keel/internal/settings"
)

// CheckSettings reads the settings files a session with opts would read and returns the
// error New would for those that cannot be read or parsed (file, line and column), without
// opening anything: a frontend says so before it asks whether to trust the workspace.
func CheckSettings(opts Options) error {
	if opts.IgnoreSettingsErrors {
		return nil
	}
	cwd, err := resolveCwd(opts.Cwd)
	if err != nil {
		return err
	}
	st, _ := settings.Load(settings.Options{
		Env:          settings.Env{Home: opts.Home},
		ProjectDir:   ProjectRoot(filepath.Clean(cwd)),
		ManagedPath:  opts.ManagedSettingsPath,
		Flags:        opts.SettingsFlags,
		SettingsArgs: opts.SettingsArgs,
	})
	if bad := st.Unreadable(); len(bad) > 0 {
		return unreadableError(bad)
	}
	return nil
}
