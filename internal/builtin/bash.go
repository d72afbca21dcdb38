package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
)

type bashInput struct {
	Command         string `json:"command"`
	Timeout         int    `json:"timeout,omitempty"`
	Description     string `json:"description,omitempty"`
	RunInBackground bool   `json:"run_in_background,omitempty"`
	// DangerouslyDisableSandbox (Claude Code's field) asks to run outside the sandbox; the
	// call then goes through the normal permission flow. Offered only with a sandbox.
	DangerouslyDisableSandbox bool `json:"dangerouslyDisableSandbox,omitempty"`
}

const bashSchema = `{"type":"object","properties":{
"command":{"type":"string","description":"The command to run"},
"timeout":{"type":"integer","minimum":1,"maximum":600000,"description":"In ms (default 120000)"},
"description":{"type":"string","description":"What it does, in 5-10 words"},
"run_in_background":{"type":"boolean","description":"Run in the background; read output with BashOutput"}},
"required":["command"],"additionalProperties":false}`

// Bash returns the Bash tool. Foreground commands run in the agent's cwd with a timeout, and a
// `cd` persists to later calls through a [tool.Modifier]; background ones go to jobs.
// Commands get the call's environment ([tool.Env.Environ]; keel's own when it has none).
func Bash(jobs *shell.Jobs) tool.Tool { return SandboxedBash(jobs, nil) }

// SandboxedBash is the Bash tool with its commands (foreground and background, and all they
// start) run in sb when its policy is on (see [sandbox.Policy.Choose]). Its schema then
// offers dangerouslyDisableSandbox, and its description says what the sandbox allows.
func SandboxedBash(jobs *shell.Jobs, sb *sandbox.Sandbox) tool.Tool {
	schema, desc := bashSchema, description("Bash")
	if sb != nil && sb.Policy().Enabled() {
		schema = strings.Replace(bashSchema, `"run_in_background":`, `"dangerouslyDisableSandbox":{"type":"boolean","description":"Run unsandboxed (asks the user)"},
"run_in_background":`, 1)
		desc += "\n\n" + description("BashSandbox")
	} else {
		sb = nil
	}
	return tool.New(tool.Spec[bashInput]{
		Name:        "Bash",
		Description: desc,
		Schema:      []byte(schema),
		Run: func(ctx context.Context, env *tool.Env, in bashInput) tool.Result {
			var vars []string
			if env.Environ != nil {
				vars = env.Environ()
			}
			return runBash(ctx, env, in, jobs, vars, sb)
		},
	})
}

func runBash(ctx context.Context, env *tool.Env, in bashInput, jobs *shell.Jobs, vars []string, sb *sandbox.Sandbox) tool.Result {
	if strings.TrimSpace(in.Command) == "" {
		return tool.Errorf("command is empty.")
	}
	dir := env.State.Cwd
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return tool.Errorf("The working directory %s no longer exists.", dir)
	}
	effects := []string{"ran: " + in.Command}
	box, notice, refusal := chooseSandbox(sb, in)
	if refusal != "" {
		return tool.Errorf("%s", refusal)
	}
	procEnv := vars // nil inherits keel's
	if box != nil {
		procEnv = sandbox.WithoutCredentials(procEnv)
	} else if sb != nil {
		var dropped []string
		procEnv, dropped = hostexec.Environ(procEnv)
		if len(dropped) > 0 {
			notice = strings.TrimSpace(notice + fmt.Sprintf("\n[Ran outside the sandbox without the PATH entries sandboxed commands can write: %s.]", strings.Join(dropped, ", ")))
		}
	}
	if env.Traceparent != "" {
		if procEnv == nil {
			procEnv = os.Environ()
		}
		procEnv = append(procEnv[:len(procEnv):len(procEnv)], "TRACEPARENT="+env.Traceparent)
	}
	if in.RunInBackground {
		id, err := jobs.Start(shell.Command{Script: in.Command, Dir: dir, Env: procEnv, Sandbox: box})
		if err != nil {
			return tool.Errorf("Cannot start the command: %v", err)
		}
		return tool.Result{
			Content: tool.Text(strings.TrimSpace(fmt.Sprintf("Started background shell %s. Read its output with BashOutput (bash_id %q); stop it with KillShell.\n%s", id, id, notice))).Content,
			Output:  map[string]any{"backgroundTaskId": id},
			Effects: effects,
		}
	}
	timeout := shell.DefaultTimeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout)*time.Millisecond, shell.MaxTimeout)
	}
	res, err := runCommand(ctx, env.ToolUseID, shell.Command{Script: in.Command, Dir: dir, Env: procEnv, Timeout: timeout, TempDir: jobs.TempDir(), OnLine: outputProgress(env.Progress), Sandbox: box})
	if err != nil {
		return tool.Errorf("Cannot run the command: %v", err)
	}
	out := strings.TrimRight(res.Output, "\n")
	var notes []string
	isErr := false
	switch {
	case res.TimedOut:
		isErr = true
		notes = append(notes, fmt.Sprintf("[Timed out after %s; the command and its child processes were killed.]", timeout))
	case res.Interrupted:
		isErr = true
		notes = append(notes, "[Interrupted; the command and its child processes were killed.]")
	case res.ExitCode != 0:
		isErr = true
		notes = append(notes, fmt.Sprintf("[Exit code %d]", res.ExitCode))
	}
	if res.OutputHeldOpen {
		notes = append(notes, "[A process the command started outside its process group (setsid, a daemon) kept the output open; the call returned without waiting for it, and what it writes from now on is not read. Start long-running processes with run_in_background.]")
	}
	if box != nil {
		notes = append(notes, box.Policy().Explain(in.Command, res.Output, dir, res.SandboxDenied)...)
		for _, p := range res.SandboxPlanted {
			notes = append(notes, "[Sandbox: "+p+"]")
		}
	}
	if notice != "" {
		notes = append(notes, notice)
	}
	var mod tool.Modifier
	if res.Cwd != "" && res.Cwd != realPath(dir) {
		cwd := res.Cwd
		mod = func(s *tool.State) { s.Cwd = cwd }
		notes = append(notes, "[Working directory is now "+cwd+"]")
	}
	if out == "" && len(notes) == 0 {
		out = "(no output)"
	}
	text := strings.Join(append([]string{out}, notes...), "\n")
	return tool.Result{
		Content:  tool.Text(strings.TrimPrefix(text, "\n")).Content,
		IsError:  isErr,
		Modifier: mod,
		Output:   map[string]any{"stdout": res.Output, "stderr": "", "exitCode": res.ExitCode, "interrupted": res.TimedOut || res.Interrupted},
		Effects:  effects,
	}
}

type bashOutputInput struct {
	BashID string `json:"bash_id"`
	Filter string `json:"filter,omitempty"`
}

const bashOutputSchema = `{"type":"object","properties":{
"bash_id":{"type":"string","description":"Id of the background shell"},
"filter":{"type":"string","description":"Regex: return only matching lines (others are dropped)"}},
"required":["bash_id"],"additionalProperties":false}`

// BashOutput returns the BashOutput tool: the new output of a background shell and its status.
func BashOutput(jobs *shell.Jobs) tool.Tool {
	return tool.New(tool.Spec[bashOutputInput]{
		Name:        "BashOutput",
		Description: description("BashOutput"),
		Schema:      []byte(bashOutputSchema),
		IsReadOnly:  tool.Always[bashOutputInput],
		Deferred:    true,
		Run: func(ctx context.Context, env *tool.Env, in bashOutputInput) tool.Result {
			var filter *regexp.Regexp
			if in.Filter != "" {
				re, err := regexp.Compile(in.Filter)
				if err != nil {
					return tool.Errorf("Invalid filter: %v", err)
				}
				filter = re
			}
			s, err := jobs.Read(in.BashID, filter)
			if err != nil {
				return noJob(jobs, in.BashID, err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Status: %s", s.Status)
			if s.Status != shell.StatusRunning {
				fmt.Fprintf(&b, " (exit code %d)", s.ExitCode)
			}
			if s.Dropped > 0 {
				fmt.Fprintf(&b, "\n[%d earlier bytes were dropped: read more often]", s.Dropped)
			}
			out := strings.TrimRight(s.Output, "\n")
			if out == "" {
				out = "(no new output)"
			}
			b.WriteString("\n" + out)
			return tool.Text(b.String())
		},
	})
}

type killShellInput struct {
	ShellID string `json:"shell_id"`
}

const killShellSchema = `{"type":"object","properties":{
"shell_id":{"type":"string","description":"Id of the background shell"}},
"required":["shell_id"],"additionalProperties":false}`

// KillShell returns the KillShell tool, which stops a background shell and its processes.
func KillShell(jobs *shell.Jobs) tool.Tool {
	return tool.New(tool.Spec[killShellInput]{
		Name:        "KillShell",
		Description: description("KillShell"),
		Schema:      []byte(killShellSchema),
		Deferred:    true,
		Run: func(ctx context.Context, env *tool.Env, in killShellInput) tool.Result {
			s, err := jobs.Kill(in.ShellID)
			if err != nil {
				return noJob(jobs, in.ShellID, err)
			}
			if s.Status != shell.StatusKilled {
				return tool.Text(fmt.Sprintf("Background shell %s had already ended (%s, exit code %d).", s.ID, s.Status, s.ExitCode))
			}
			return tool.Result{Content: tool.Text(fmt.Sprintf("Killed background shell %s.", s.ID)).Content, Effects: []string{"killed: " + s.Command}}
		},
	})
}

func noJob(jobs *shell.Jobs, id string, err error) tool.Result {
	if errors.Is(err, shell.ErrNoJob) {
		ids := jobs.IDs()
		if len(ids) == 0 {
			return tool.Errorf("No background shell %q; none were started.", id)
		}
		return tool.Errorf("No background shell %q. Known: %s.", id, strings.Join(ids, ", "))
	}
	return tool.Errorf("%v", err)
}

// progressEvery paces the output lines a running command reports as progress.
const progressEvery = 250 * time.Millisecond

// outputProgress reports the command's latest output line as progress (the UI's live line,
// an MCP client's progress notifications), at most once per progressEvery.
func outputProgress(progress func(string)) func(string) {
	if progress == nil {
		return nil
	}
	var last time.Time
	return func(line string) {
		line = strings.TrimSpace(line)
		if line == "" || time.Since(last) < progressEvery {
			return
		}
		last = time.Now()
		progress(line)
	}
}

// chooseSandbox decides where one call runs: box is the sandbox to run it in (nil: outside),
// notice a line for the result when the sandbox should have been used and could not, and
// refusal the whole answer when the call may not run at all. A sandbox that cannot start
// never lets a command run silently outside: either the result says so, or with
// failIfUnavailable the call fails.
func chooseSandbox(sb *sandbox.Sandbox, in bashInput) (box *sandbox.Sandbox, notice, refusal string) {
	if sb == nil {
		return nil, "", ""
	}
	p := sb.Policy()
	switch p.Choose(in.Command, in.DangerouslyDisableSandbox) {
	case sandbox.Refused:
		return nil, "", "dangerouslyDisableSandbox is refused: sandbox.allowUnsandboxedCommands is false, so every command runs in the sandbox. Change the command to work inside it."
	case sandbox.Outside:
		return nil, "", ""
	}
	if err := sb.Available(); err != nil {
		if errors.Is(err, sandbox.ErrBusy) {
			// A limit that was full (one another session's command can fill): never a reason
			// to run outside. The next call tries again.
			return nil, "", fmt.Sprintf("The command was not run: %v. Nothing ran; try it again (a limit on processes, memory or disk may have been full). If it keeps failing, `keel doctor` shows why.", err)
		}
		if p.FailIfUnavailable {
			return nil, "", fmt.Sprintf("The command was not run: %v (%s).", err, p.FailWhy)
		}
		return nil, fmt.Sprintf("[Not sandboxed: %v. The command ran without the sandbox.]", err), ""
	}
	return sb, "", ""
}
