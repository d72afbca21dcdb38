package tui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// Run runs the full-screen UI until the user quits or ctx ends.
func Run(ctx context.Context, cfg Config, opts ...tea.ProgramOption) error {
	m := New(cfg)
	defer m.Close()
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, opts...)...)
	m.watchTeam(p)
	_, err := p.Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("run terminal UI: %w", err)
	}
	if cfg.Out != nil {
		m.writeScrollback(cfg.Out)
	}
	return nil
}

// PlainAsker answers permission asks on a line-oriented terminal: it prints the question to
// out and reads y, a (always) or anything else (deny, the text being the reason) from in.
// RunPlain shares the reader with it; asks only come while a prompt runs, when RunPlain is
// not reading.
type PlainAsker struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out io.Writer
}

// NewPlainAsker reads answers from in and writes questions to out.
func NewPlainAsker(in io.Reader, out io.Writer) *PlainAsker {
	return &PlainAsker{in: bufio.NewReader(in), out: out}
}

// Ask asks one question.
func (a *PlainAsker) Ask(ctx context.Context, req keel.PermissionRequest) keel.PermissionAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	who := "keel"
	if req.Agent != "" {
		who = req.Agent
	}
	what := req.Command
	if what == "" {
		what = strings.Join(append(req.Paths, req.URL), " ")
	}
	fmt.Fprintf(a.out, "\n%s wants to use %s: %s\n%s\nallow? [y]es / [a]lways / or type a reason to deny: ", who, req.Tool, strings.TrimSpace(what), req.Reason)
	line, err := a.in.ReadString('\n')
	line = strings.TrimSpace(line)
	switch {
	case err != nil && line == "":
		return keel.PermissionAnswer{Reason: "no answer: input closed"}
	case line == "y" || line == "yes":
		return keel.PermissionAnswer{Allow: true}
	case line == "a" || line == "always":
		return keel.PermissionAnswer{Allow: true, Always: true}
	}
	return keel.PermissionAnswer{Reason: "the user denied this call: " + line}
}

// RunPlain is the UI for when stdin or stdout is not a terminal: a line-oriented loop that
// reads one prompt per line from the asker's input and prints the answer as plain text, tool
// calls as one line each. prompt, if set, is sent first.
func RunPlain(ctx context.Context, b Backend, a *PlainAsker, prompt string) error {
	out := a.out
	send := func(p string) error {
		for ev, err := range b.Send(ctx, p) {
			if err != nil {
				fmt.Fprintf(out, "\nerror: %v\n", err)
				return nil
			}
			if ev.From().AgentID != "" {
				continue
			}
			switch e := ev.(type) {
			case keel.TextDelta:
				fmt.Fprint(out, e.Text)
			case keel.ToolStart:
				fmt.Fprintf(out, "\n● %s(%s)\n", e.Name, keyArg(e.Name, e.Input, b.Cwd()))
			case keel.ToolEnd:
				status := "ok"
				if e.IsError {
					status = "error"
				}
				fmt.Fprintf(out, "  ⎿ %s %s\n", status, fmtDur(e.Duration))
			default:
				if line := plainLine(ev); line != "" {
					fmt.Fprintf(out, "\n%s\n", line)
				}
			}
		}
		return ctx.Err()
	}
	if p := strings.TrimSpace(prompt); p != "" {
		fmt.Fprintf(out, "> %s\n", p)
		if err := send(p); err != nil {
			return err
		}
	}
	for {
		fmt.Fprint(out, "> ")
		a.mu.Lock()
		line, err := a.in.ReadString('\n')
		a.mu.Unlock()
		line = strings.TrimSpace(line)
		if line == "/exit" || line == "/quit" {
			return nil
		}
		if line != "" {
			if serr := send(line); serr != nil {
				return serr
			}
		}
		if err == io.EOF {
			fmt.Fprintln(out)
			return nil
		}
		if err != nil {
			return fmt.Errorf("read prompt: %w", err)
		}
	}
}
