package team

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/procgroup"
)

// Launcher starts teammates as processes of their own (`keel team worker`), which join the
// team through the coordination backend and outlive the lead.
type Launcher interface {
	Launch(ctx context.Context, l Launch) (Process, error)
	// InTmux says the lead runs inside tmux (teammateMode auto picks tmux panes then).
	InTmux() bool
}

// Launch is one teammate process to start.
type Launch struct {
	Team, Member string
	// LeadTranscript is passed on to the worker (see [Config.LeadTranscript]).
	LeadTranscript string
	// Tmux runs it in a tmux pane instead of in the background.
	Tmux   bool
	Resume bool
}

// Process is a started teammate process.
type Process struct {
	PID  int
	Pane string
}

// ExecLauncher starts `keel team worker` processes.
type ExecLauncher struct {
	// Command is the worker's program and leading arguments; Launch appends --team, --member
	// and --resume.
	Command []string
	// Env is the worker's environment (nil: this process's). TmuxEnv names the variables a
	// tmux pane is given explicitly, since it inherits the tmux server's environment.
	Env     []string
	TmuxEnv []string
	// LogDir receives each background worker's output as <member>.log.
	LogDir string
	// Tmux is whether the lead runs inside tmux ($TMUX is set).
	Tmux   bool
	Logger *slog.Logger

	// mu serialises tmux session creation.
	mu sync.Mutex
}

// InTmux reports whether the lead runs inside tmux.
func (l *ExecLauncher) InTmux() bool { return l.Tmux }

func (l *ExecLauncher) args(in Launch) []string {
	args := append([]string(nil), l.Command...)
	args = append(args, "--team", in.Team, "--member", in.Member)
	if in.LeadTranscript != "" {
		args = append(args, "--lead-transcript", in.LeadTranscript)
	}
	if in.Resume {
		args = append(args, "--resume-member")
	}
	return args
}

// Launch starts the worker: in the background with its output in LogDir, or in a tmux pane
// (a split of the lead's window inside tmux, else a window of a detached session named after
// the team).
func (l *ExecLauncher) Launch(ctx context.Context, in Launch) (Process, error) {
	args := l.args(in)
	if in.Tmux {
		return l.tmux(ctx, in, args)
	}
	if err := os.MkdirAll(l.LogDir, 0o700); err != nil {
		return Process{}, fmt.Errorf("teammate log directory: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(l.LogDir, in.Member+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return Process{}, fmt.Errorf("teammate log: %w", err)
	}
	defer logFile.Close()
	// Not CommandContext: the worker outlives the call, and the lead.
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = l.Env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C meant for the lead's terminal does not reach it.
	procgroup.Own(cmd)
	if err := cmd.Start(); err != nil {
		return Process{}, fmt.Errorf("start teammate process: %w", err)
	}
	// Reap it when it ends, so a dead worker does not linger as a zombie that looks alive.
	go func() { _ = cmd.Wait() }()
	return Process{PID: cmd.Process.Pid}, nil
}

func (l *ExecLauncher) tmux(ctx context.Context, in Launch, args []string) (Process, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var envArgs []string
	env := l.Env
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for _, want := range l.TmuxEnv {
			if name == want || (strings.HasSuffix(want, "*") && strings.HasPrefix(name, strings.TrimSuffix(want, "*"))) {
				envArgs = append(envArgs, "-e", kv)
			}
		}
	}
	format := []string{"-P", "-F", "#{pane_id} #{pane_pid}"}
	var tmuxArgs []string
	session := "keel-" + in.Team
	switch {
	case l.Tmux:
		tmuxArgs = append([]string{"split-window", "-d"}, format...)
	case hostexec.Command(ctx, "tmux", "has-session", "-t", session).Run() == nil:
		tmuxArgs = append([]string{"split-window", "-d", "-t", session}, format...)
	default:
		tmuxArgs = append([]string{"new-session", "-d", "-s", session, "-x", "200", "-y", "50"}, format...)
	}
	tmuxArgs = append(append(tmuxArgs, envArgs...), "--")
	tmuxArgs = append(tmuxArgs, args...)
	out, err := hostexec.Command(ctx, "tmux", tmuxArgs...).Output()
	if err != nil {
		return Process{}, fmt.Errorf("start teammate in tmux: %w", err)
	}
	fields := strings.Fields(strings.TrimSpace(firstLine(string(out))))
	if len(fields) != 2 {
		return Process{}, fmt.Errorf("start teammate in tmux: unexpected answer %q", out)
	}
	pid, _ := strconv.Atoi(fields[1])
	target := session
	if l.Tmux {
		target = fields[0]
	}
	_ = hostexec.Command(ctx, "tmux", "select-layout", "-t", target, "tiled").Run()
	return Process{PID: pid, Pane: fields[0]}, nil
}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		return sc.Text()
	}
	return ""
}
