package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/session"
)

// runFlags are the flags of a headless or interactive run.
type runFlags struct {
	// given says whether a flag was given on the command line (the flag set's Changed once
	// registered); nil, as in options built by a test, is "none was".
	given              func(name string) bool
	print              bool
	outputFormat       string
	inputFormat        string
	model              string
	maxTurns           int
	systemPrompt       string
	appendSystemPrompt string
	verbose            bool
	permissionMode     string
	providerName       string
	baseURL            string
	cwd                string
	allowedTools       []string
	disallowedTools    []string
	addDirs            []string
	skipPermissions    bool
	settings           []string
	trust              bool
	continueLast       bool
	resume             string
	forkSession        bool
	sessionID          string
	noPersistence      bool
	mcp                mcpFlags
	agents             string
	agent              string
	forkSubagents      bool
	noWait             bool
	sdk                sdkFlags
	// maxTurnsSet says --max-turns was given: without it a headless run has a default cap.
	maxTurnsSet          bool
	ignoreSettingsErrors bool
	teammateMode         string
	teamName             string
	sandbox              string
}

// DefaultHeadlessMaxTurns caps the model turns of a `keel -p` run that sets no --max-turns,
// so a model stuck in a loop cannot run unattended for hours; --max-turns 0 lifts the cap.
const DefaultHeadlessMaxTurns = 200

// permissionModes are the values --permission-mode accepts.
var permissionModes = lazy.Value[[]string]{New: runconfig.PermissionModes}

func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.given = fl.Changed
	defer markSessionFlags(fl, flagNames(fl))
	fl.BoolVarP(&f.print, "print", "p", false, "run the prompt headless and print the result")
	fl.StringVar(&f.outputFormat, "output-format", "text", "output of -p: text, json or stream-json")
	fl.StringVar(&f.inputFormat, "input-format", "text", "input of -p: text or stream-json (one user message per line on stdin)")
	fl.StringVar(&f.model, "model", "", "model id or alias: opus, sonnet, haiku, fable, opusplan, default (default $ANTHROPIC_MODEL, else the newest opus; see keel models)")
	fl.IntVar(&f.maxTurns, "max-turns", 0, fmt.Sprintf("stop after this many model turns (0: no limit; -p runs default to %d)", DefaultHeadlessMaxTurns))
	fl.StringVar(&f.systemPrompt, "system-prompt", "", "replace the system prompt")
	fl.StringVar(&f.appendSystemPrompt, "append-system-prompt", "", "append to the system prompt")
	fl.BoolVar(&f.verbose, "verbose", false, "show the whole conversation (text output) and every event")
	fl.StringVar(&f.permissionMode, "permission-mode", "", "permission mode: "+strings.Join(permissionModes.Get(), ", ")+" (default: settings, else default)")
	fl.StringVar(&f.providerName, "provider", "", "model API: anthropic or openai (OpenAI-compatible servers such as Ollama, vLLM, llama.cpp)")
	fl.StringVar(&f.baseURL, "base-url", "", "base URL of the model API")
	fl.StringVar(&f.cwd, "cwd", "", "working directory (default: the current directory)")
	fl.StringArrayVar(&f.allowedTools, "allowedTools", nil, `tools and rules to allow without asking: --allowedTools "Bash(go test:*)" Edit (takes every argument up to the next flag)`)
	fl.StringArrayVar(&f.disallowedTools, "disallowedTools", nil, "tools and rules to deny (takes every argument up to the next flag)")
	fl.StringArrayVar(&f.addDirs, "add-dir", nil, "additional working directories the agent may use (takes every argument up to the next flag)")
	fl.BoolVar(&f.skipPermissions, "dangerously-skip-permissions", false, "allow every tool call except deny rules (bypassPermissions mode)")
	fl.StringArrayVar(&f.settings, "settings", nil, "extra settings: a JSON file or a JSON object (repeatable)")
	fl.BoolVar(&f.trust, "trust", false, "trust this workspace for this run: run its hooks and MCP servers")
	fl.BoolVarP(&f.continueLast, "continue", "c", false, "continue the most recent session in this directory")
	fl.StringVarP(&f.resume, "resume", "r", "", "resume the session with this id")
	fl.BoolVar(&f.forkSession, "fork-session", false, "with --continue or --resume: continue as a new session, leaving the original untouched")
	fl.StringVar(&f.sessionID, "session-id", "", "use this UUID as the new session's id")
	fl.BoolVar(&f.noPersistence, "no-session-persistence", false, "write no transcript or file history")
	f.mcp.register(cmd)
	fl.StringVar(&f.agents, "agents", "", `extra agent definitions as JSON: {"name": {"description": …, "prompt": …}}`)
	fl.StringVar(&f.agent, "agent", "", "run the main thread as this agent: its prompt, tools, model, permission mode and initialPrompt")
	fl.BoolVar(&f.forkSubagents, "fork-subagents", false, "an Agent call without subagent_type forks the caller (sharing its context and prompt cache)")
	fl.BoolVar(&f.noWait, "no-wait", false, "with -p: exit without waiting for background agents (and teammates)")
	f.sdk.register(cmd)
	fl.BoolVar(&f.ignoreSettingsErrors, "ignore-settings-errors", false, "run even when a settings file does not parse (its settings, deny rules included, are not used)")
	fl.StringVar(&f.teamName, "team-name", "", "the name of this session's agent team (default: derived from the session id); keel worker --team joins it")
	fl.StringVar(&f.teammateMode, "teammate-mode", "", "where agent teammates run: in-process, process, tmux or auto (default: the teammateMode setting, else in-process)")
	fl.StringVar(&f.sandbox, "sandbox", "", "run Bash in the kernel sandbox: "+strings.Join(sandbox.Modes, ", ")+" (default: workspace-write where the machine supports it, unless sandbox.enabled is false)")
	for _, alias := range [][2]string{{"allowed-tools", "allowedTools"}, {"disallowed-tools", "disallowedTools"}} {
		fl.StringArrayVar(aliasTarget(f, alias[1]), alias[0], nil, "same as --"+alias[1])
		_ = fl.MarkHidden(alias[0])
	}
}

func aliasTarget(f *runFlags, name string) *[]string {
	if name == "allowedTools" {
		return &f.allowedTools
	}
	return &f.disallowedTools
}

// headlessMaxTurns is the turn cap of a -p run: --max-turns when given, else KEEL_MAX_TURNS,
// else the default.
func (a *app) headlessMaxTurns(f *runFlags) (int, error) {
	if f.maxTurnsSet {
		return f.maxTurns, nil
	}
	if err := a.env.Check("KEEL_MAX_TURNS"); err != nil {
		return 0, usageError{err}
	}
	if a.env.MaxTurnsSet {
		return a.env.MaxTurns, nil
	}
	return DefaultHeadlessMaxTurns, nil
}

// set says whether flag name was given on the command line.
func (f *runFlags) set(name string) bool { return f.given != nil && f.given(name) }

// config is the configuration these flags ask for (runConfig).
func (f *runFlags) config(a *app) (runconfig.Config, error) { return a.runConfig(f) }

func (f *runFlags) validate() error {
	if err := f.sdk.validate(); err != nil {
		return err
	}
	if f.permissionMode != "" && !contains(permissionModes.Get(), f.permissionMode) {
		return usageError{fmt.Errorf("--permission-mode %q is not one of %s", f.permissionMode, strings.Join(permissionModes.Get(), ", "))}
	}
	if !contains(render.Formats, f.outputFormat) {
		return usageError{fmt.Errorf("--output-format %q is not one of %s", f.outputFormat, strings.Join(render.Formats, ", "))}
	}
	if f.inputFormat != "text" && f.inputFormat != "stream-json" {
		return usageError{fmt.Errorf("--input-format %q is not one of text, stream-json", f.inputFormat)}
	}
	if f.forkSession && !f.continueLast && f.resume == "" {
		return usageError{errors.New("--fork-session needs --continue or --resume")}
	}
	if f.continueLast && f.resume != "" {
		return usageError{errors.New("use either --continue or --resume, not both")}
	}
	if f.sessionID != "" {
		if _, err := uuid.Parse(f.sessionID); err != nil {
			return usageError{fmt.Errorf("--session-id %q is not a UUID", f.sessionID)}
		}
	}
	if f.maxTurns < 0 {
		return usageError{fmt.Errorf("--max-turns must be 0 or more, not %d", f.maxTurns)}
	}
	if !contains(append([]string{""}, runconfig.ToolSearchModes...), f.mcp.toolSearch) {
		return usageError{fmt.Errorf("--tool-search %q is not one of %s", f.mcp.toolSearch, strings.Join(runconfig.ToolSearchModes, ", "))}
	}
	if f.sandbox != "" && !contains(sandbox.Modes, f.sandbox) {
		return usageError{fmt.Errorf("--sandbox %q is not one of %s", f.sandbox, strings.Join(sandbox.Modes, ", "))}
	}
	if f.teammateMode != "" && !contains(runconfig.TeammateModes(), f.teammateMode) {
		return usageError{fmt.Errorf("--teammate-mode %q is not one of %s", f.teammateMode, strings.Join(runconfig.TeammateModes(), ", "))}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isHeadless says a run has no terminal UI: -p, stream-json input (the Agent SDK never
// passes -p), or stream-json output with stdin not a terminal.
func (a *app) isHeadless(f *runFlags) bool {
	return f.print || f.inputFormat == "stream-json" || (f.outputFormat == "stream-json" && !isTerminal(a.std.In))
}

func (a *app) runRoot(ctx context.Context, f *runFlags, args []string) error {
	if err := f.validate(); err != nil {
		return err
	}
	logger, closeLog, err := f.sdk.logger(a.std.Err)
	if err != nil {
		return err
	}
	defer closeLog()
	a.logger = logger
	if f.sdk.initOnly {
		return a.runInitOnly(ctx, f)
	}
	if !a.isHeadless(f) {
		return a.runInteractive(ctx, f, args)
	}
	if f.inputFormat == "stream-json" {
		return a.runControl(ctx, f)
	}
	prompts, err := a.prompts(f, args)
	if err != nil {
		return err
	}
	cfg, err := a.headlessConfig(f)
	if err != nil {
		return err
	}
	sess, err := a.openSession(ctx, cfg, a.seams())
	if err != nil {
		return err
	}
	defer sess.Close()
	var r render.Renderer
	if f.outputFormat == "stream-json" {
		r = render.NewStreamJSON(a.std.Out, a.streamOptions(f))
		for _, n := range f.sdk.ignoredNotices() {
			_ = r.Render(n)
		}
	} else if r, err = render.New(f.outputFormat, a.std.Out, f.verbose); err != nil {
		return usageError{err}
	}
	r = render.WithNotices(r, f.outputFormat, f.verbose, a.std.Err)
	err = a.headless(ctx, sess, prompts, r, !f.noWait)
	if ec, ok := errors.AsType[exitCodeError](err); ok && ec.result != nil && ec.result.Subtype == "error_max_turns" && !f.maxTurnsSet && !a.env.MaxTurnsSet {
		ec.err = fmt.Errorf("%w; headless runs stop after %d turns unless --max-turns says otherwise (--max-turns 0: no limit)", ec.err, cfg.MaxTurns)
		return ec
	}
	return err
}

// runInitOnly runs the Setup and SessionStart hooks of a session and exits (--init-only).
func (a *app) runInitOnly(ctx context.Context, f *runFlags) error {
	cfg, err := a.headlessConfig(f)
	if err != nil {
		return err
	}
	cfg.NoPersistence, cfg.Supervisor = true, runconfig.Supervisor{}
	sess, err := a.openSession(ctx, cfg, a.seams())
	if err != nil {
		return err
	}
	return sess.Close()
}

// headlessConfig is the configuration of a headless run: the flags with the headless turn
// cap.
func (a *app) headlessConfig(f *runFlags) (runconfig.Config, error) {
	cfg, err := a.runConfig(f)
	if err != nil {
		return cfg, err
	}
	cfg.MaxTurns, err = a.headlessMaxTurns(f)
	return cfg, err
}

// headless runs each prompt in turn and reports the last result through the exit code. With
// wait, it then waits for the background agents still running and gives the model a turn for
// their reports, until none is left.
func (a *app) headless(ctx context.Context, sess *session.Session, prompts func() (string, bool, error), r render.Renderer, wait bool) error {
	var last *event.Result
	// While the lead waits, its team works (teammates here and in other processes): their
	// events are shown as they happen, between the lead's turns.
	var mu sync.Mutex
	finished := false // guarded by mu: nothing is written after the last line
	idle := func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			_ = r.Render(e)
		}
	}
	// The main agent's result line is held until the run knows what follows it: teammates
	// and background agents keep working after it, and what they use then belongs in it
	// (Session.Settle), or the result lines would not add up to the run's requests.
	held := false
	flush := func() error {
		if !held {
			return nil
		}
		held = false
		sess.Settle(last)
		mu.Lock()
		defer mu.Unlock()
		if err := r.Render(*last); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return nil
	}
	for {
		prompt, ok, err := prompts()
		if err != nil {
			return usageError{err}
		}
		if !ok {
			if !wait {
				break
			}
			sess.Agents().SetIdleEvents(idle)
			n, err := sess.Agents().WaitBackground(ctx)
			sess.Agents().SetIdleEvents(nil)
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
		} else if err := flush(); err != nil {
			return err
		}
		turn := sess.Send(ctx, prompt)
		if !ok {
			turn = sess.Agents().SendPending(ctx)
		}
		for e, err := range turn {
			if err != nil {
				if last != nil && last.IsError {
					break // the result line already carries it
				}
				_ = flush()
				_ = r.Finish()
				return err
			}
			if res, ok := e.(event.Result); ok && res.Origin.AgentID == "" {
				last, held = &res, true
				continue
			}
			mu.Lock()
			err := r.Render(e)
			mu.Unlock()
			if err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	finished = true
	if err := r.Finish(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return a.runOutcome(last)
}

// runOutcome is how a headless run ends for the shell: a failed run exits 1 with its message
// in words (the result's subtype is for machine output only); a run in which some of the
// model's calls were denied exits exitDenied, saying how many, since the answer it printed
// may claim work that never happened.
func (a *app) runOutcome(last *event.Result) error {
	switch {
	case last == nil:
		return nil
	case last.IsError:
		return exitCodeError{code: exitError, err: errors.New(render.ResultMessage(*last)), result: last}
	case len(last.Denials) > 0:
		return exitCodeError{code: exitDenied, err: errors.New(render.DeniedSummary(len(last.Denials), exitDenied))}
	}
	return nil
}

// prompts returns an iterator over the prompts of this run: the argument, stdin as one
// prompt, or one per stream-json line.
func (a *app) prompts(f *runFlags, args []string) (func() (string, bool, error), error) {
	prompt := strings.Join(args, " ")
	if prompt == "" && a.std.In != nil {
		b, err := io.ReadAll(a.std.In)
		if err != nil {
			return nil, fmt.Errorf("read prompt from stdin: %w", err)
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt == "" {
		msg := "no prompt: give one as an argument or on stdin"
		if f.hasListFlag() {
			msg += "; --allowedTools, --disallowedTools, --add-dir, --mcp-config and --tools take every argument up to the next flag, so put the prompt before them or after --"
		}
		return nil, usageError{errors.New(msg)}
	}
	done := false
	return func() (string, bool, error) {
		if done {
			return "", false, nil
		}
		done = true
		return prompt, true, nil
	}, nil
}
