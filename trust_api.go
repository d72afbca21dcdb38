package keel

import (
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/trust"
)

// Workspace is the project a session opened with some Options works in, as a trust prompt
// shows it. Until it is trusted, what it provides may only narrow what keel does: its
// settings add deny and ask rules but no allow rules, mode, directories, environment or
// hooks; its MCP servers, hooks and skill shell lines do not run; its memory files include
// nothing outside it.
type Workspace struct {
	// Dir is the project root: the nearest directory at or above Options.Cwd holding .git,
	// else Options.Cwd.
	Dir string
	// Trusted is Options.Trust, or a trust recorded with `keel trust` or [TrustWorkspace].
	Trusted bool
	// Provides lists, relative to Dir, the files and directories found there that take effect
	// only once the workspace is trusted (settings, .mcp.json, skills, memory files…).
	Provides []string
}

// projectProvided are the paths a trust prompt mentions when the project has them.
var projectProvided = []string{
	".keel/settings.json", ".keel/settings.local.json", ".claude/settings.json", ".claude/settings.local.json",
	".mcp.json", ".keel/skills", ".keel/commands", ".keel/agents", ".claude/skills", ".claude/commands",
	".claude/agents", "KEEL.md", "CLAUDE.md", "AGENTS.md", "KEEL.local.md", "CLAUDE.local.md",
}

// InspectWorkspace finds the workspace a session with opts would open in and whether it is
// trusted. It starts nothing and reads no file's content.
func InspectWorkspace(opts Options) (Workspace, error) {
	cfg, err := opts.config()
	if err != nil {
		return Workspace{}, err
	}
	cwd := cfg.Cwd
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Workspace{}, err
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return Workspace{}, err
	}
	w := Workspace{Dir: session.ProjectRoot(abs)}
	w.Trusted = trust.Decide(homeOf(cfg), w.Dir, cfg.Trust)
	for _, p := range projectProvided {
		path := filepath.Join(w.Dir, p)
		if _, err := os.Stat(path); err == nil && !settings.StandIn(path) {
			w.Provides = append(w.Provides, p)
		}
	}
	return w, nil
}

// TrustWorkspace records that the user trusts the workspace of opts, as `keel trust` does.
func TrustWorkspace(opts Options) error {
	w, err := InspectWorkspace(opts)
	if err != nil {
		return err
	}
	cfg, err := opts.config()
	if err != nil {
		return err
	}
	return trust.Grant(homeOf(cfg), w.Dir)
}

// home is keel's directory for opts: the configuration's, else $KEEL_HOME or ~/.keel.
func (opts Options) home() string {
	cfg, _ := opts.config()
	return homeOf(cfg)
}

func homeOf(cfg runconfig.Config) string {
	if cfg.Home != "" {
		return cfg.Home
	}
	return defaultHome()
}
