package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/effort"

	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/runconfig"
)

// sdkFlags are the flags the Agent SDKs pass to the CLI they drive (the SDK's option →
// flag mapping). keel accepts every one: most act as in Claude Code; the few naming things
// keel has no counterpart for (channels, betas) are reported as ignored, never refused.
type sdkFlags struct {
	// given is as runFlags' (the same flag set's Changed).
	given              func(name string) bool
	settingSources     string
	includePartial     bool
	replayUserMessages bool
	includeHookEvents  bool
	jsonSchema         string
	tools              string
	effort             string
	thinking           string
	maxThinkingTokens  int64
	thinkingDisplay    string
	fallbackModel      string
	maxBudgetUSD       float64
	resumeSessionAt    string
	debug              string
	debugToStderr      bool
	debugFile          string
	// init, initOnly and maintenance run the Setup hooks first.
	init, initOnly, maintenance bool

	// pluginDirs are --plugin-dir folders or zips; pluginDirsNoMCP the same without their MCP
	// servers (the SDK's skipMcpDiscovery).
	pluginDirs, pluginDirsNoMCP []string
	// accepted without a counterpart in keel; named in a notice when given.
	channels                             []string
	betas, permissionPrompts, taskBudget string
	managedSettings, projectConfigRoot   string
	resumeDropsTurn                      string
	sessionMirror, managedInInitialize   bool
	// accepted because keel already behaves as they ask.
	awaitInitialize, allowSkipPermissions, noOptionalLocks bool
	initializeFields                                       string
}

func (f *sdkFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.given = fl.Changed
	fl.StringVar(&f.settingSources, "setting-sources", "", "settings sources to load, comma-separated: user, project, local (empty: none; managed policy and flags always apply)")
	fl.BoolVar(&f.includePartial, "include-partial-messages", false, "with stream-json output: also print the reply as it streams (stream_event lines)")
	fl.BoolVar(&f.replayUserMessages, "replay-user-messages", false, "with stream-json input and output: echo each prompt back as a user line")
	fl.BoolVar(&f.includeHookEvents, "include-hook-events", false, "with stream-json output: print hook_started and hook_response lines")
	fl.StringVar(&f.jsonSchema, "json-schema", "", "JSON schema the final answer must match; it is returned as structured_output")
	fl.StringVar(&f.tools, "tools", "", `built-in tools to offer, comma-separated ("default": all of them, "": none)`)
	fl.StringVar(&f.effort, "effort", "", "reasoning effort: "+strings.Join(effort.Levels, ", "))
	fl.StringVar(&f.thinking, "thinking", "", "extended thinking: "+strings.Join(runconfig.ThinkingModes, ", "))
	fl.Int64Var(&f.maxThinkingTokens, "max-thinking-tokens", 0, "thinking budget in tokens (0: thinking off unless --thinking)")
	fl.StringVar(&f.thinkingDisplay, "thinking-display", "", "how thinking is shown: summarized, omitted or highlights (keel shows it as sent)")
	fl.StringVar(&f.fallbackModel, "fallback-model", "", "model to switch to when the main model is overloaded or unavailable")
	fl.Float64Var(&f.maxBudgetUSD, "max-budget-usd", 0, "stop the turn once it has cost this many dollars (0: no limit)")
	fl.StringVar(&f.resumeSessionAt, "resume-session-at", "", "with --resume: continue from this assistant message (uuid), dropping what came after")
	fl.StringVarP(&f.debug, "debug", "d", "", "log at debug level (the optional value filters nothing yet)")
	fl.Lookup("debug").NoOptDefVal = "all"
	fl.BoolVar(&f.debugToStderr, "debug-to-stderr", false, "with --debug: write the log to stderr")
	fl.StringVar(&f.debugFile, "debug-file", "", "write the debug log to this file")
	fl.BoolVar(&f.init, "init", false, "run the Setup hooks (trigger init), then the session")
	fl.BoolVar(&f.initOnly, "init-only", false, "run the Setup and SessionStart hooks, then exit")
	fl.BoolVar(&f.maintenance, "maintenance", false, "run the Setup hooks (trigger maintenance), then the session")

	ignored := func(p any, name, usage string) {
		switch v := p.(type) {
		case *[]string:
			fl.StringArrayVar(v, name, nil, usage)
		case *string:
			fl.StringVar(v, name, "", usage)
		case *bool:
			fl.BoolVar(v, name, false, usage)
		}
		_ = fl.MarkHidden(name)
	}
	fl.StringArrayVar(&f.pluginDirs, "plugin-dir", nil, "load a plugin from this folder or .zip for this session (repeatable)")
	fl.StringArrayVar(&f.pluginDirsNoMCP, "plugin-dir-no-mcp", nil, "like --plugin-dir, without the plugin's MCP servers")
	ignored(&f.channels, "channels", "accepted for the Agent SDK; keel has no channels")
	ignored(&f.betas, "betas", "accepted for the Agent SDK; keel sends no beta headers")
	ignored(&f.permissionPrompts, "permission-prompts", "accepted for the Agent SDK")
	ignored(&f.taskBudget, "task-budget", "accepted for the Agent SDK")
	ignored(&f.managedSettings, "managed-settings", "accepted for the Agent SDK; keel reads managed settings from their file")
	ignored(&f.projectConfigRoot, "project-config-root", "accepted for the Agent SDK")
	ignored(&f.resumeDropsTurn, "resume-drops-turn", "accepted for the Agent SDK")
	ignored(&f.sessionMirror, "session-mirror", "accepted for the Agent SDK")
	ignored(&f.managedInInitialize, "managed-settings-in-initialize", "accepted for the Agent SDK")
	ignored(&f.awaitInitialize, "await-initialize", "keel always reads initialize before the first prompt")
	ignored(&f.allowSkipPermissions, "allow-dangerously-skip-permissions", "allow switching to bypassPermissions later (keel always allows it)")
	ignored(&f.noOptionalLocks, "no-optional-locks", "keel takes no optional locks")
	ignored(&f.initializeFields, "initialize-fields", "keel applies whatever initialize carries")
}

// set says whether flag name was given on the command line.
func (f *sdkFlags) set(name string) bool { return f.given != nil && f.given(name) }

func (f *sdkFlags) validate() error {
	for _, s := range f.sources() {
		if !slices.Contains([]string{"user", "project", "local"}, s) {
			return usageError{fmt.Errorf("--setting-sources: %q is not one of user, project, local", s)}
		}
	}
	if f.effort != "" && !effort.Valid(f.effort) {
		return usageError{fmt.Errorf("--effort %q is not one of %s", f.effort, strings.Join(effort.Levels, ", "))}
	}
	if f.thinking != "" && !slices.Contains(runconfig.ThinkingModes, f.thinking) {
		return usageError{fmt.Errorf("--thinking %q is not one of %s", f.thinking, strings.Join(runconfig.ThinkingModes, ", "))}
	}
	if f.maxThinkingTokens < 0 || f.maxBudgetUSD < 0 {
		return usageError{fmt.Errorf("--max-thinking-tokens and --max-budget-usd must not be negative")}
	}
	return nil
}

// plugins are the --plugin-dir and --plugin-dir-no-mcp plugins, in that order.
func (f *sdkFlags) plugins() []runconfig.Plugin {
	var out []runconfig.Plugin
	for _, d := range f.pluginDirs {
		out = append(out, runconfig.Plugin{Path: d})
	}
	for _, d := range f.pluginDirsNoMCP {
		out = append(out, runconfig.Plugin{Path: d, NoMCP: true})
	}
	return out
}

// setupTrigger is the Setup hooks' trigger the flags ask for, "" for none.
func (f *sdkFlags) setupTrigger() string {
	switch {
	case f.maintenance:
		return "maintenance"
	case f.init || f.initOnly:
		return "init"
	}
	return ""
}

// sources lists --setting-sources' entries; nil when the flag was not given (all sources).
func (f *sdkFlags) sources() []string {
	if !f.set("setting-sources") {
		return nil
	}
	return runconfig.SplitCommas(f.settingSources)
}

// builtinTools is --tools as a list: nil when not given (every built-in tool).
func (f *sdkFlags) builtinTools() []string {
	if !f.set("tools") || f.tools == "default" {
		return nil
	}
	return runconfig.SplitCommas(f.tools)
}

// ignoredNotices names the flags given that keel accepts without acting on them.
func (f *sdkFlags) ignoredNotices() []event.Notice {
	var names []string
	for _, n := range []string{"channels", "betas", "permission-prompts", "task-budget",
		"managed-settings", "managed-settings-in-initialize", "project-config-root", "resume-drops-turn", "session-mirror"} {
		if f.set(n) {
			names = append(names, "--"+n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []event.Notice{{Level: "warn", Text: "keel accepts but ignores " + strings.Join(names, ", ") + ": it has no counterpart for them"}}
}

// logger is the run's debug log: --debug-file's file, or stderr with --debug or
// --debug-to-stderr; without them, nothing. close ends it.
func (f *sdkFlags) logger(stderr io.Writer) (logger *slog.Logger, close func(), err error) {
	var w io.Writer
	close = func() {}
	switch {
	case f.debugFile != "":
		file, err := os.OpenFile(f.debugFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, close, usageError{fmt.Errorf("--debug-file: %w", err)}
		}
		w, close = file, func() { file.Close() }
	case f.debug != "" || f.debugToStderr:
		w = stderr
	default:
		return discardLogger(), close, nil
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), close, nil
}

// isTerminal reports whether r is a terminal (a character device), as opposed to a pipe or
// file: only then may keel start its terminal UI.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
