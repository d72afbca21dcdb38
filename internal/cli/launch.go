package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/companion"
)

// Interactive runs the terminal UI on a session opened with opts. cmd/keel-tui provides it;
// the keel binary has none and hands interactive runs to keel-tui instead.
type Interactive func(ctx context.Context, opts keel.Options, prompt string, std Streams, noColor bool, version string) error

// tuiBinary is the executable that holds the terminal UI.
const tuiBinary = "keel-tui"

// runInteractive starts the terminal UI: in this process when it is linked in, else by
// replacing this process with keel-tui (found beside this executable, then on PATH) with the
// same arguments.
func (a *app) runInteractive(ctx context.Context, f *runFlags, args []string) error {
	if a.interactive != nil {
		return a.interactive(ctx, a.libraryOptions(f), strings.Join(args, " "), a.std, a.getenv("NO_COLOR") != "", Version)
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

// libraryOptions turns the run flags into the library's options, for the terminal UI.
func (a *app) libraryOptions(f *runFlags) keel.Options {
	mode := f.permissionMode
	if f.skipPermissions {
		mode = "bypassPermissions"
	}
	return keel.Options{
		Cwd:                  f.cwd,
		Home:                 a.env.Home,
		Provider:             f.providerName,
		Model:                f.model,
		BaseURL:              f.baseURL,
		MaxTurns:             f.maxTurns,
		SystemPrompt:         f.systemPrompt,
		AppendSystemPrompt:   f.appendSystemPrompt,
		PermissionMode:       mode,
		AllowedTools:         splitToolList(f.allowedTools),
		DisallowedTools:      splitToolList(f.disallowedTools),
		AddDirs:              f.addDirs,
		Settings:             f.settings,
		Trust:                f.trust,
		Resume:               f.resume,
		Continue:             f.continueLast,
		ForkSession:          f.forkSession,
		SessionID:            f.sessionID,
		NoPersistence:        f.noPersistence,
		Teams:                a.env.Teams,
		TeammateMode:         f.teammateMode,
		TeammateCommand:      a.workerCommand(f, f.model),
		Agents:               f.agents,
		Agent:                f.agent,
		ForkSubagents:        f.forkSubagents,
		MCPConfig:            f.mcp.configs,
		StrictMCPConfig:      f.mcp.strict,
		ToolSearch:           f.mcp.toolSearch,
		PermissionPromptTool: f.mcp.permissionPromptTool,
		Getenv:               a.getenv,
		IgnoreSettingsErrors: f.ignoreSettingsErrors,
		Supervisor:           a.librarySupervisor(f),
	}
}

// librarySupervisor hands the terminal UI's background agents to the supervisor, as keel -p
// --no-wait does: they outlive the UI, and their reports reach it (or the next --continue)
// once. The agents run under the keel binary beside keel-tui, which starts without the UI.
func (a *app) librarySupervisor(f *runFlags) *keel.Supervisor {
	if a.env.Home == "" || f.noPersistence {
		return nil
	}
	exe := a.keelExe()
	if filepath.Base(exe) == tuiBinary {
		if plain := filepath.Join(filepath.Dir(exe), "keel"); isFile(plain) {
			exe = plain
		}
	}
	return &keel.Supervisor{Program: exe, Env: a.supervisorEnv(), NATS: a.embeddedNATS()}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
