package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// terminalOutputLimit is the output a client terminal keeps for keel: what Bash returns.
const terminalOutputLimit = 30000

// host does the tools' file and command I/O through the client when it offers to
// (fs/read_text_file, fs/write_text_file, terminal/*), and leaves it to the operating system
// otherwise. Paths reach it absolute and permission-checked.
type host struct{ s *session }

var _ keel.ToolHost = (*host)(nil)

func (h *host) ReadTextFile(ctx context.Context, path string) (string, error) {
	if !h.s.caps.Fs.ReadTextFile {
		return "", keel.ErrNotHosted
	}
	resp, err := h.s.a.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sdk.SessionId(h.s.id), Path: path})
	if err != nil {
		return "", fmt.Errorf("the editor did not read %s: %w", path, err)
	}
	return resp.Content, nil
}

func (h *host) WriteTextFile(ctx context.Context, path, content string) error {
	if !h.s.caps.Fs.WriteTextFile {
		return keel.ErrNotHosted
	}
	if _, err := h.s.a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(h.s.id), Path: path, Content: content}); err != nil {
		return fmt.Errorf("the editor did not write %s: %w", path, err)
	}
	return nil
}

// RunCommand runs a Bash command in a client terminal the editor shows in the tool call. A
// timeout or a cancelled turn kills it; either way the terminal is released only after the
// command has exited and its output was read.
func (h *host) RunCommand(ctx context.Context, toolUseID string, c keel.Command) (keel.CommandResult, error) {
	if !h.s.caps.Terminal {
		return keel.CommandResult{}, keel.ErrNotHosted
	}
	conn, sid := h.s.a.conn, sdk.SessionId(h.s.id)
	// The requests that clean up must reach the client after the turn was cancelled.
	bg := context.WithoutCancel(ctx)
	req := sdk.CreateTerminalRequest{SessionId: sid, Command: "bash", Args: []string{"-c", c.Script}, OutputByteLimit: sdk.Ptr(terminalOutputLimit)}
	if c.Dir != "" {
		req.Cwd = sdk.Ptr(c.Dir)
	}
	for _, kv := range c.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			req.Env = append(req.Env, sdk.EnvVariable{Name: k, Value: v})
		}
	}
	created, err := conn.CreateTerminal(ctx, req)
	if err != nil {
		return keel.CommandResult{}, fmt.Errorf("the editor did not open a terminal: %w", err)
	}
	tid := created.TerminalId
	defer func() {
		if _, err := conn.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: tid}); err != nil {
			h.s.a.cfg.Logger.Debug("acp: terminal not released", "terminal", tid, "err", err)
		}
	}()
	h.s.calls.terminal(ctx, toolUseID, tid)

	wait := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var res keel.CommandResult
	exit, err := conn.WaitForTerminalExit(wait, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	if err != nil {
		res.TimedOut = errors.Is(wait.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		res.Interrupted = !res.TimedOut
		if _, kerr := conn.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: sid, TerminalId: tid}); kerr != nil {
			return res, fmt.Errorf("the editor did not kill the command (%v): %w", err, kerr)
		}
		waitKilled, cancel := context.WithTimeout(bg, killWait)
		defer cancel()
		exit, _ = conn.WaitForTerminalExit(waitKilled, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	}
	out, err := conn.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: tid})
	if err != nil {
		return res, fmt.Errorf("the editor did not give the command's output: %w", err)
	}
	res.Output = out.Output
	switch {
	case exit.ExitCode != nil:
		res.ExitCode = *exit.ExitCode
	case exit.Signal != nil:
		res.ExitCode = 128 + 9
		if !res.TimedOut && !res.Interrupted {
			res.Output += fmt.Sprintf("\n[killed by %s]", *exit.Signal)
		}
	}
	return res, nil
}

// killWait bounds the wait for a killed command to exit; releasing the terminal kills it too.
const killWait = 10 * time.Second
