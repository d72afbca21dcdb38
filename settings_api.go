package keel

import "github.com/keel-dev/keel/internal/session"

// CheckSettings returns the error [New] would for a settings file of opts that cannot be read
// or parsed (naming file, line and column), without opening anything: a frontend reports it
// before asking whether to trust the workspace, not after. Nil with IgnoreSettingsErrors.
func CheckSettings(opts Options) error {
	cfg, err := opts.config()
	if err != nil {
		return err
	}
	return session.CheckConfig(cfg, opts.seams())
}
