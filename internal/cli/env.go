package cli

import (
	"log/slog"
	"os"
	"path/filepath"
)

// Env is what keel reads from the environment for itself, read once in [loadEnv]. Provider
// credentials are read by the connect package through the same getenv.
type Env struct {
	Home string // KEEL_HOME, default ~/.keel
	// MaxTurns is KEEL_MAX_TURNS as given: the turn cap of headless runs without --max-turns.
	MaxTurns string
}

func loadEnv(getenv func(string) string) Env {
	home := getenv("KEEL_HOME")
	if home == "" {
		if dir := getenv("HOME"); dir != "" {
			home = filepath.Join(dir, ".keel")
		} else if dir, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(dir, ".keel")
		}
	}
	return Env{Home: home, MaxTurns: getenv("KEEL_MAX_TURNS")}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
