package cli

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Env is what keel reads from the environment for itself, read once in [loadEnv]. Provider
// credentials are read by the connect package through the same getenv.
type Env struct {
	Home string // KEEL_HOME, default ~/.keel
	// MaxTurns is KEEL_MAX_TURNS as given: the turn cap of headless runs without --max-turns.
	MaxTurns string
	// Teams is CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1, the switch Claude Code users set.
	Teams bool
	// TeamLease is KEEL_TEAM_LEASE, how long a teammate's task claim holds without a
	// heartbeat (tests make it short); 0 is the default.
	TeamLease time.Duration
	// InTmux is whether keel runs inside tmux ($TMUX).
	InTmux bool
	// NATSURL is KEEL_NATS_URL: the NATS server(s) of the coordination backend.
	NATSURL string
}

func loadEnv(getenv func(string) string) Env {
	lease, _ := time.ParseDuration(getenv("KEEL_TEAM_LEASE"))
	teams := getenv("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS")
	env := Env{Teams: teams == "1" || strings.EqualFold(teams, "true"), TeamLease: lease, InTmux: getenv("TMUX") != ""}
	home := getenv("KEEL_HOME")
	if home == "" {
		if dir := getenv("HOME"); dir != "" {
			home = filepath.Join(dir, ".keel")
		} else if dir, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(dir, ".keel")
		}
	}
	env.Home, env.MaxTurns = home, getenv("KEEL_MAX_TURNS")
	env.NATSURL = strings.TrimSpace(getenv("KEEL_NATS_URL"))
	return env
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
