// Package interactive is the entry point of the terminal UI: it opens the session from the
// command line's options and runs internal/tui on it. It lives apart from internal/cli so the
// keel binary does not link the UI: glamour's syntax highlighter alone registers its lexers
// and styles at process start (about 18 ms and 12 MB), which every headless run, every
// worker and `keel --version` would pay. cmd/keel-tui links it; keel execs keel-tui.
package interactive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"sync"

	"github.com/charmbracelet/x/term"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/browser"
	"github.com/keel-dev/keel/internal/tui"
)

// UI is how the command line asks the terminal UI to look and start.
type UI struct {
	NoColor bool
	Version string
	// BypassAgreed skips the bypassPermissions question: the user passed
	// --dangerously-skip-permissions, which says the same (a script driving the UI has
	// nobody to answer it). Nothing is recorded, so --permission-mode bypassPermissions
	// still asks once.
	BypassAgreed bool
}

// Run starts a session with opts and hands it to the terminal UI; prompt, if any, is the
// first one. When in or out is not a terminal it falls back to a line-oriented loop: one
// prompt per input line, plain text out.
func Run(ctx context.Context, opts keel.Options, prompt string, in io.Reader, out io.Writer, ui UI) error {
	noColor, version := ui.NoColor, ui.Version
	if !isTerminal(in) || !isTerminal(out) {
		pa := tui.NewPlainAsker(in, out)
		// No trust question here: its answer would take the first line of piped input. The
		// session's notice says how to trust the workspace.
		opts.Ask = pa.Ask
		sess, err := keel.New(ctx, opts)
		if err != nil {
			return err
		}
		defer sess.Close()
		return tui.RunPlain(ctx, sess, pa, prompt)
	}
	asker := tui.NewAsker()
	opts.Ask = asker.Ask
	// A settings file that does not parse is said before the trust question, not after it.
	if err := keel.CheckSettings(opts); err != nil {
		return err
	}
	if q, ask := trustQuestion(opts); ask {
		choice, err := tui.AskTrust(ctx, q, noColor)
		if err != nil {
			return err
		}
		opts = applyTrust(opts, choice, out)
	}
	opts, err := chooseSession(ctx, opts, noColor)
	if errors.Is(err, errNoSession) {
		return nil
	}
	if err != nil {
		return err
	}
	elicitor := tui.NewElicitor()
	opts.Elicit = elicitor.Elicit
	open := openURL(opts.Getenv)
	signIns := tui.NewSignIns(open)
	opts.MCPAuthorize = signIns.Authorize
	sess, err := keel.New(ctx, opts)
	if err != nil {
		return err
	}
	if ok, err := confirmBypass(ctx, sess, opts, ui, out); !ok {
		sess.Close()
		return err
	}
	b := &backend{opts: opts, cur: sess}
	defer b.close()
	return tui.Run(ctx, tui.Config{
		Backend:  b,
		Asker:    asker,
		Elicitor: elicitor,
		OpenURL:  open,
		SignIns:  signIns,
		Prompt:   prompt,
		NoColor:  noColor,
		Version:  version,
		Out:      out,
		Editor:   editor(opts.Getenv),
		// The UI's preferences and bug reports live in keel's directory.
		PrefsPath: inDataDir(opts, "tui.json"),
		ReportDir: inDataDir(opts, "bug-reports"),
	})
}

// trustQuestion is the first-run question for a workspace the user has not trusted and that
// provides something only trust enables; ask is false when there is nothing to ask.
func trustQuestion(opts keel.Options) (q tui.TrustQuestion, ask bool) {
	w, err := keel.InspectWorkspace(opts)
	if err != nil || w.Trusted || len(w.Provides) == 0 {
		return tui.TrustQuestion{}, false
	}
	return tui.TrustQuestion{Dir: w.Dir, Provides: w.Provides}, true
}

// applyTrust acts on the answer before the session opens, so nothing the workspace provides
// has run yet: always records the trust, session trusts this run only.
func applyTrust(opts keel.Options, choice tui.TrustChoice, out io.Writer) keel.Options {
	switch choice {
	case tui.TrustAlways:
		if err := keel.TrustWorkspace(opts); err != nil {
			fmt.Fprintf(out, "keel: warning: could not record the trust (%v); trusting this session only\n", err)
		}
		opts.Trust = true
	case tui.TrustSession:
		opts.Trust = true
	}
	return opts
}

// backend adapts a *keel.Session to the UI, and lets /resume switch to another stored session.
type backend struct {
	opts keel.Options
	// mu guards cur.
	mu  sync.Mutex
	cur *keel.Session
}

var (
	_ tui.Backend       = (*backend)(nil)
	_ tui.SessionLister = (*backend)(nil)
	_ tui.Resumer       = (*backend)(nil)
	_ tui.Rewinder      = (*backend)(nil)
	_ tui.Compactor     = (*backend)(nil)
	_ tui.Clearer       = (*backend)(nil)
	_ tui.SkillLister   = (*backend)(nil)
	_ tui.MemoryLister  = (*backend)(nil)
	_ tui.MCPStatuser   = (*backend)(nil)
	_ tui.MCPLoginer    = (*backend)(nil)
	_ tui.AgentLister   = (*backend)(nil)
	_ tui.Backgrounder  = (*backend)(nil)
	_ tui.Noticer       = (*backend)(nil)
)

func (b *backend) MCPServers() []tui.MCPServer {
	var out []tui.MCPServer
	for _, s := range b.s().MCPServers() {
		status := s.Status
		if s.Reason != "" {
			status += ": " + s.Reason
		}
		out = append(out, tui.MCPServer{Name: s.Name, Status: status})
	}
	return out
}

// LoginMCP signs in to an MCP server anew (/mcp login NAME).
func (b *backend) LoginMCP(ctx context.Context, name string) error { return b.s().LoginMCP(ctx, name) }

func (b *backend) Agents() []tui.AgentInfo {
	var out []tui.AgentInfo
	for _, a := range b.s().Agents() {
		out = append(out, tui.AgentInfo{Name: a.Name, Description: a.Description, Color: a.Color})
	}
	return out
}

func (b *backend) Skills() []keel.SkillInfo { return b.s().Skills() }

func (b *backend) MemoryFiles() []tui.MemoryFile {
	var out []tui.MemoryFile
	for _, f := range b.s().MemoryFiles() {
		out = append(out, tui.MemoryFile{Path: f.Path, Scope: f.Kind})
	}
	return out
}

func (b *backend) s() *keel.Session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

func (b *backend) Send(ctx context.Context, prompt string) iter.Seq2[keel.Event, error] {
	return b.s().Send(ctx, prompt)
}
func (b *backend) ID() string                          { return b.s().ID() }
func (b *backend) Model() string                       { return b.s().Model() }
func (b *backend) SetModel(m string)                   { b.s().SetModel(m) }
func (b *backend) PermissionMode() keel.PermissionMode { return b.s().PermissionMode() }
func (b *backend) SetPermissionMode(mode keel.PermissionMode) error {
	return b.s().SetPermissionMode(mode)
}
func (b *backend) Usage() (keel.Usage, float64) { return b.s().Usage() }
func (b *backend) Cwd() string                  { return b.s().Cwd() }
func (b *backend) Notices() []keel.Notice       { return b.s().Notices() }
func (b *backend) Compact(ctx context.Context, instructions string) error {
	return b.s().Compact(ctx, instructions)
}
func (b *backend) Clear(ctx context.Context) error { return b.s().Clear(ctx) }

// Background moves the running foreground subagents to the background (Ctrl+B).
func (b *backend) Background(ctx context.Context) error { return b.s().Background(ctx) }

func (b *backend) Rewind(ctx context.Context, toUUID string, code, conversation bool) error {
	_, err := b.s().Rewind(ctx, toUUID, code, conversation)
	return err
}

func (b *backend) ListSessions() ([]tui.SessionInfo, error) {
	list, err := keel.ListSessions(keel.DataDir(b.opts), b.s().Cwd())
	return sessionInfos(list), err
}

// Resume closes the current session and opens the stored one.
func (b *backend) Resume(ctx context.Context, id string) error {
	opts := b.opts
	opts.Resume, opts.Continue, opts.SessionID = id, false, ""
	next, err := keel.New(ctx, opts)
	if err != nil {
		return err
	}
	b.mu.Lock()
	prev := b.cur
	b.cur = next
	b.mu.Unlock()
	return prev.Close()
}

func (b *backend) close() { b.s().Close() }

// openURL opens addresses with $BROWSER; nil when it is not set, so the UI tells the user
// to open them.
func openURL(getenv func(string) string) func(string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	b := getenv("BROWSER")
	if b == "" {
		return nil
	}
	return func(url string) error { return browser.Open(b, url) }
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

var (
	_ tui.Teamer   = (*backend)(nil)
	_ tui.Reporter = (*backend)(nil)
)

func (b *backend) PendingReports() int { return b.s().PendingReports() }

func (b *backend) TeamName() string { return b.s().TeamName() }

func (b *backend) TeamMembers(ctx context.Context) []tui.TeamMember {
	ms, _ := b.s().TeamMembers(ctx)
	out := make([]tui.TeamMember, 0, len(ms))
	for _, m := range ms {
		out = append(out, tui.TeamMember{Name: m.Name, Color: m.Color, State: m.State, Task: m.Task, Runner: m.Runner, AgentID: m.AgentID})
	}
	return out
}

func (b *backend) TeamTasks(ctx context.Context) []tui.TeamTask {
	ts, _ := b.s().TeamTasks(ctx)
	out := make([]tui.TeamTask, 0, len(ts))
	for _, t := range ts {
		out = append(out, tui.TeamTask{ID: t.ID, Subject: t.Subject, Status: t.Status, Owner: t.Owner, BlockedBy: t.BlockedBy})
	}
	return out
}

func (b *backend) MessageTeammate(ctx context.Context, to, text string) error {
	return b.s().MessageTeammate(ctx, to, text)
}

func (b *backend) TeamUnread(ctx context.Context) int { return b.s().TeamUnread(ctx) }

func (b *backend) SendPending(ctx context.Context) iter.Seq2[keel.Event, error] {
	return b.s().SendPending(ctx)
}

func (b *backend) OnIdleEvents(fn func(keel.Event)) { b.s().OnIdleEvents(fn) }

// editor is the user's editor command: $VISUAL, else $EDITOR.
func editor(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := strings.TrimSpace(getenv("VISUAL")); v != "" {
		return v
	}
	return strings.TrimSpace(getenv("EDITOR"))
}
