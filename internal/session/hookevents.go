package session

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/sessionhooks"
)

// newHookDispatch wires the session's hook events (internal/sessionhooks) to its hooks as
// they stand at each call, its id, transcript, directory and mode, its notices and its
// watched files.
func newHookDispatch(s *Session) *sessionhooks.Dispatcher {
	return sessionhooks.New(sessionhooks.Config{
		Hooks:          sessionHooks{s},
		SessionID:      func() string { return s.id },
		TranscriptPath: s.TranscriptPath,
		PermissionMode: s.PermissionMode,
		Cwd:            s.Cwd,
		Emit:           s.emit,
		Keep: func(n event.Notice) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.notices = append(s.notices, n)
		},
		Turn:        s.currentTurn,
		WorkingDirs: func() []string { return s.config.WorkingDirs() },
		Watch:       s.watchFiles,
	})
}

// startHooks runs the Setup and SessionStart hooks; what they add joins the first prompt.
func startHooks(ctx context.Context, s *Session, source string) {
	added := s.hookd.SessionStart(ctx, s.opts.Cwd, s.opts.SDK.SetupTrigger, source)
	s.mu.Lock()
	s.startContext = append(s.startContext, added...)
	s.mu.Unlock()
}

// submitPrompt runs the UserPromptSubmit hooks for prompt and builds the user message's
// blocks: the prompt, the attachments, then the context the session's start and the hooks
// added. A block refuses the prompt.
func submitPrompt(ctx context.Context, s *Session, prompt string, sink *chanSink) ([]message.Block, error) {
	added, err := s.hookd.UserPromptSubmit(ctx, prompt, sink.Emit)
	if err != nil {
		return nil, err
	}
	blocks := append([]message.Block{message.Text(prompt)}, attachments(ctx)...)
	s.mu.Lock()
	extra := append(s.startContext, added...)
	s.startContext = nil
	s.mu.Unlock()
	for _, c := range extra {
		blocks = append(blocks, message.Text(c))
	}
	return blocks, nil
}

// addDirectory makes dir a working directory of the session (/add-dir DIR) and tells the
// DirectoryAdded hooks.
func addDirectory(ctx context.Context, s *Session, dir string) (string, error) {
	if dir == "" {
		return "", errors.New("/add-dir needs a directory")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.Cwd(), dir)
	}
	abs, err := resolveCwd(dir)
	if err != nil {
		return "", err
	}
	if err := s.checker.Apply(dirUpdate(abs)); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.state.AdditionalDirs = append(s.state.AdditionalDirs, abs)
	s.mu.Unlock()
	s.hookd.DirectoryAdded(ctx, abs)
	return abs, nil
}

// dirUpdate is the permission update that adds dir to the working directories.
func dirUpdate(dir string) []permission.Update {
	return []permission.Update{{Type: permission.UpdateAddDirectories, Directories: []string{dir}, Destination: permission.DestinationSession}}
}

// watchFiles adds paths (relative ones to the session's directory) to the watched files;
// the FileChanged hooks hear of their changes.
func (s *Session) watchFiles(paths []string) {
	s.watched.add(paths, watchHooks{logger: s.logger, cwd: s.Cwd, changed: func(file, kind string) []string {
		return s.hookd.FileChanged(context.Background(), file, kind)
	}})
}

// notifyingAsker puts a permission question to inner unless the sandbox allows the command
// or a PermissionRequest hook answers it, and runs the Notification hooks first, so a user
// away from the terminal can be told that keel waits for them.
type notifyingAsker struct {
	s     *Session
	inner permission.Asker
}

func (a notifyingAsker) Ask(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
	if a.s.sandboxAutoAllows(r) {
		return permission.AllowOnce(), nil
	}
	if ans, ok := a.s.hookd.PermissionRequest(ctx, r); ok {
		return ans, nil
	}
	a.s.hookd.PermissionPrompt(ctx, r.Request.Tool)
	return a.inner.Ask(ctx, r)
}

var _ hooks.EventRunner = sessionHooks{}
