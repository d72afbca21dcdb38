package session

import (
	"context"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/sessionlog"
	"github.com/keel-dev/keel/internal/transcript"
)

// Transcript returns the session's persistence: its recorded history and title.
func (s *Session) Transcript() *Persistence { return &s.persist }

// HistoryEntries returns a copy of the conversation with the transcript id of each message,
// index for index, so a frontend can show a resumed conversation and rewind to any prompt in
// it. A compacted conversation starts with the summary message.
func (p *Persistence) HistoryEntries() ([]message.Message, []string) { return p.entries() }

// SetTitle names the session in the transcript (`/rename`): session lists show the title, and
// `--resume TITLE` finds the session by it.
func (p *Persistence) SetTitle(ctx context.Context, title string) error {
	return p.log.SetTitle(ctx, title)
}

// record appends one entry to the transcript, if there is one.
func (p *Persistence) record(ctx context.Context, e transcript.Entry) (string, error) {
	return p.log.Record(ctx, e)
}

// recordMetadata appends a metadata entry; failures are logged, never fatal.
func (p *Persistence) recordMetadata(ctx context.Context, t transcript.Type, v any) {
	p.log.RecordMetadata(ctx, t, v)
}

// TranscriptPath is where the session's transcript really is; empty when nothing is saved.
func (s *Session) TranscriptPath() string { return s.persist.log.Path() }

// historyEntries is the history with the transcript id of each message (Persistence.entries).
func historyEntries(s *Session) func() ([]message.Message, []string) {
	return func() ([]message.Message, []string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return append([]message.Message(nil), s.history...), append([]string(nil), s.uuids...)
	}
}

// openTranscript creates, resumes or forks the session's transcript (internal/sessionlog),
// and returns what replay rebuilt (nil for a new session). With persistence off, nothing is
// written.
func openTranscript(ctx context.Context, s *Session) (*transcript.State, error) {
	if s.opts.Home == "" || s.opts.NoPersistence || s.opts.Team.Worker != nil {
		// A team worker keeps no transcript of its own: its teammate's is beside the lead's.
		return nil, nil
	}
	o, err := sessionlog.Open(ctx, sessionlog.Options{
		Homes: sessionHomes(s.opts.Home, s.opts.SessionHomes), FileHistoryHome: s.opts.Home, Cwd: s.opts.Cwd,
		SessionID: s.id, Resume: s.opts.Resume, Continue: s.opts.Continue, ForkSession: s.opts.ForkSession,
		ResumeAt: s.opts.SDK.ResumeSessionAt, GitBranch: gitBranch(s.opts.Cwd), Version: s.opts.Version,
		Now: s.opts.Now, Logger: s.logger,
	})
	if err != nil {
		return nil, err
	}
	s.id, s.snapshots = o.SessionID, o.Snapshots
	s.persist.log, s.transcript = o.Log, o.Log.Writer()
	if o.ShellDir != "" {
		s.jobs.SetTempDir(o.ShellDir)
	}
	return o.State, nil
}

// restore takes up the state replay rebuilt from a resumed transcript: the history, the
// notices, the todo list and (unless the options set one) the permission mode. It returns
// the environment the main agent's prompt was rendered from.
func restore(ctx context.Context, s *Session, st *transcript.State) *prompt.Environment {
	if st == nil {
		return nil
	}
	r := sessionlog.Replay(ctx, st, s.persist.log)
	s.history, s.uuids = r.History, r.UUIDs
	s.notices = append(s.notices, r.Notices...)
	if len(r.Todos) > 0 {
		s.todos.Set(r.Todos)
	}
	if r.Mode != "" && s.opts.PermissionMode == "" {
		if m, err := permission.ParseMode(r.Mode); err == nil {
			s.checker.SetMode(m)
		}
	}
	return r.Environment
}

// resumeAt drops the resumed history after the assistant message ResumeSessionAt names.
func resumeAt(ctx context.Context, s *Session) error {
	at := s.opts.SDK.ResumeSessionAt
	if at == "" {
		return nil
	}
	s.mu.Lock()
	history, uuids := s.history, s.uuids
	s.mu.Unlock()
	h, u, err := sessionlog.ResumeAt(ctx, history, uuids, at, s.persist.log)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.history, s.uuids = h, u
	s.mu.Unlock()
	return nil
}
