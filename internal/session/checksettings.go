package session

import (
	"fmt"
	"path/filepath"
	"strings"

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

// unreadableError names every settings file that could not be read or parsed at all.
func unreadableError(bad []settings.Problem) error {
	var lines []string
	for _, p := range bad {
		p.Msg = strings.TrimSuffix(p.Msg, " (file ignored)")
		lines = append(lines, p.Error())
	}
	return fmt.Errorf("%s; fix it, or pass --ignore-settings-errors to run without that file", strings.Join(lines, "; "))
}
