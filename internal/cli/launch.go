package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/runconfig"
)

// Interactive runs the terminal UI on a session opened with keel.New(opts). cmd/keel-tui
// provides it; the keel binary has none and hands interactive runs to keel-tui instead.
type Interactive func(ctx context.Context, opts keel.Options, prompt string, std Streams, ui UI) error

// UI is what the command line tells the terminal UI besides the session's options.
type UI struct {
	NoColor bool
	Version string
	// BypassAgreed: --dangerously-skip-permissions was given, which answers the
	// bypassPermissions question the UI would ask.
	BypassAgreed bool
}

// tuiBinary is the executable that holds the terminal UI.
const tuiBinary = "keel-tui"

// runInteractive starts the terminal UI: in this process when it is linked in, else by
// replacing this process with keel-tui (found beside this executable, then on PATH) with the
// same arguments.
func (a *app) runInteractive(ctx context.Context, f *runFlags, args []string) error {
	if a.interactive != nil {
		cfg, err := a.runConfig(f)
		if err != nil {
			return err
		}
		// The UI's background agents run in the supervisor, as keel -p --no-wait's do: they
		// outlive it, and their reports reach it (or the next --continue) once.
		cfg.Supervisor.Detach = cfg.Supervisor.Use
		cfg.Interactive = true
		opts, err := a.tuiOptions(cfg)
		if err != nil {
			return err
		}
		return a.interactive(ctx, opts, strings.Join(args, " "), a.std, UI{NoColor: a.env.NoColor, Version: Version, BypassAgreed: f.skipPermissions})
	}
	path, err := findTUI()
	if err != nil {
		return usageError{err}
	}
	argv := append([]string{tuiBinary}, os.Args[1:]...)
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("start %s: %w", path, err)
	}
	return nil
}

func findTUI() (string, error) {
	p, err := companion.Find(tuiBinary)
	if err != nil {
		return "", fmt.Errorf("the terminal UI is the keel-tui binary: %w: "+
			"install both with `go install ./cmd/...` (or run `go run ./cmd/keel-tui`), or run headless with keel -p PROMPT", err)
	}
	return p, nil
}

// tuiOptions are the terminal UI's options: the run's configuration, with the choices the UI
// makes before it opens the session — the session to resume when --resume named none, the
// workspace's trust — where the UI reads and changes them, and the directories it lists
// stored sessions of.
func (a *app) tuiOptions(cfg runconfig.Config) (keel.Options, error) {
	choose := cfg.Resume == runconfig.ResumeChoose
	if choose {
		cfg.Resume = ""
	}
	opts, err := a.libraryOptions(cfg)
	if choose {
		opts.Resume, opts.ForkSession = keel.ResumeChoose, cfg.ForkSession
	}
	opts.Home, opts.Cwd = cfg.Home, cfg.Cwd
	return opts, err
}

// libraryOptions hands the run's configuration to the library, whole: the terminal UI is a
// client of keel.New.
func (a *app) libraryOptions(cfg runconfig.Config) (keel.Options, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return keel.Options{}, fmt.Errorf("encode run configuration: %w", err)
	}
	seams := a.seams()
	opts := keel.Options{Config: raw, Getenv: a.getenv, Logger: a.logger, TeammateCommand: seams.TeammateCommand}
	if cfg.Supervisor.Use {
		opts.Supervisor = &keel.Supervisor{Program: seams.Program, Env: seams.SupervisorEnv, NATS: seams.SupervisorNATS}
	}
	return opts, nil
}
