package interactive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/tui"
)

// errNoSession means the user closed the resume picker without choosing: keel exits quietly.
var errNoSession = errors.New("no session chosen")

// chooseSession lets the user pick the session a bare --resume (keel.ResumeChoose) resumes.
// A session named by id, id prefix or title keel.New finds itself.
func chooseSession(ctx context.Context, opts keel.Options, noColor bool) (keel.Options, error) {
	if opts.Resume != keel.ResumeChoose {
		return opts, nil
	}
	list, err := keel.ListSessions(keel.DataDir(opts), opts.Cwd)
	if err != nil {
		return opts, err
	}
	id, err := tui.PickSession(ctx, sessionInfos(list), "", noColor)
	if err != nil {
		return opts, err
	}
	if id == "" {
		return opts, errNoSession
	}
	opts.Resume = id
	return opts, nil
}

// confirmBypass asks, once per keel directory, before the first session that runs in
// bypassPermissions mode (by --permission-mode or by settings), unless
// --dangerously-skip-permissions already said yes; no closes the session.
func confirmBypass(ctx context.Context, sess *keel.Session, opts keel.Options, ui UI, out io.Writer) (bool, error) {
	if sess.PermissionMode() != "bypassPermissions" || ui.BypassAgreed || keel.BypassAccepted(opts) {
		return true, nil
	}
	ok, err := tui.ConfirmBypass(ctx, ui.NoColor)
	if err != nil || !ok {
		return false, err
	}
	if err := keel.AcceptBypass(opts); err != nil {
		fmt.Fprintf(out, "keel: warning: %v; you will be asked again\n", err)
	}
	return true, nil
}

func sessionInfos(list []keel.SessionInfo) []tui.SessionInfo {
	out := make([]tui.SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, tui.SessionInfo{ID: s.ID, Title: s.Title, FirstPrompt: s.FirstPrompt, Branch: s.Branch,
			Modified: s.Updated, Size: s.Size, Messages: s.Messages})
	}
	return out
}

var (
	_ tui.Historian       = (*backend)(nil)
	_ tui.ContextReporter = (*backend)(nil)
	_ tui.Persister       = (*backend)(nil)
)

// History is the conversation of the session, shown when it continues a stored one.
func (b *backend) History() []keel.Event { return b.s().History() }

// ContextUsage measures what the next request would carry (/context).
func (b *backend) ContextUsage(ctx context.Context) keel.ContextUsage { return b.s().ContextUsage(ctx) }

// TranscriptPath is where the conversation is kept, "" when it is not.
func (b *backend) TranscriptPath() string { return b.s().TranscriptPath() }

// SetTitle names the session (/rename).
func (b *backend) SetTitle(ctx context.Context, title string) error {
	return b.s().SetTitle(ctx, title)
}

// inDataDir is name in keel's directory, or "" when there is none.
func inDataDir(opts keel.Options, name string) string {
	dir := keel.DataDir(opts)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name)
}
