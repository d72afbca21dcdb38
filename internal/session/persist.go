package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/snapshot"
	"github.com/keel-dev/keel/internal/transcript"
)

// agentSetting is what the main agent's transcript records once, at its start, so a resumed
// session renders the same system prompt (a fresh date or git status would miss the cache).
type agentSetting struct {
	Environment *prompt.Environment `json:"environment,omitempty"`
	Model       string              `json:"model,omitempty"`
}

// Transcript returns the session's persistence: its recorded history and title.
func (s *Session) Transcript() *Persistence { return &s.persist }

// openTranscript creates, resumes or forks the session's transcript, and returns what replay
// rebuilt (nil for a new session). With persistence off, nothing is written.
func (p *Persistence) openTranscript(ctx context.Context) (*transcript.State, error) {
	s := p.s
	if s.opts.Home == "" || s.opts.NoPersistence || s.opts.Team.Worker != nil {
		// A team worker keeps no transcript of its own: its teammate's is beside the lead's.
		return nil, nil
	}
	homes := sessionHomes(s.opts.Home, s.opts.SessionHomes)
	projectDirs := transcript.ProjectDirs(homes, s.opts.Cwd)
	src := ""
	switch {
	case s.opts.Resume != "":
		p, err := transcript.FindIn(projectDirs, s.opts.Resume)
		if err != nil {
			return nil, err
		}
		src = p
	case s.opts.Continue:
		latest, err := transcript.LatestIn(projectDirs)
		if err != nil {
			return nil, fmt.Errorf("continue: no earlier session in %s: %w", s.opts.Cwd, err)
		}
		src = latest.Path
	}
	opts := transcript.Options{SessionID: s.id, CWD: s.opts.Cwd, GitBranch: gitBranch(s.opts.Cwd), Version: s.opts.Version, Logger: s.logger, Now: s.opts.Now}
	var (
		w   *transcript.Writer
		st  *transcript.State
		err error
	)
	switch {
	case src == "":
		w, err = transcript.Create(ctx, transcript.SessionPath(homes[0], s.opts.Cwd, s.id), opts)
	case s.opts.ForkSession:
		w, st, err = transcript.Fork(ctx, src, transcript.SessionPath(homes[0], s.opts.Cwd, s.id), opts)
	default:
		// The session keeps its id: Resume takes it from the file. A --resume-session-at on
		// a branch the default replay leaves aside resumes that branch.
		opts.SessionID, opts.Leaf = "", s.opts.SDK.ResumeSessionAt
		w, st, err = resumeLocked(ctx, src, opts)
		if err == nil {
			s.id = st.SessionID
		}
		if errors.Is(err, transcript.ErrLocked) {
			return nil, fmt.Errorf("resume %s: the session is open in another process; use --fork-session to continue it as a new session", src)
		}
	}
	if err != nil {
		return nil, err
	}
	s.transcript = w
	p.useShellDir(w.Path())
	files, err := snapshot.Open(s.opts.Home, s.id)
	if err != nil {
		return nil, fmt.Errorf("open file history: %w", err)
	}
	s.snapshots = files
	return st, nil
}

// lockGrace is how long a resume waits for the session's lock before calling the session open
// elsewhere. Right after keel is killed, a command it was starting can hold the open file for
// a moment (a forked child that has not exec'd yet); a session really open in another keel
// holds it for much longer.
const lockGrace = 2 * time.Second

func resumeLocked(ctx context.Context, path string, opts transcript.Options) (*transcript.Writer, *transcript.State, error) {
	deadline := time.Now().Add(lockGrace)
	for {
		w, st, err := transcript.Resume(ctx, path, opts)
		if !errors.Is(err, transcript.ErrLocked) || time.Now().After(deadline) {
			return w, st, err
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// record appends one entry to the transcript, if there is one.
func (p *Persistence) record(ctx context.Context, e transcript.Entry) (string, error) {
	s := p.s
	if s.transcript == nil {
		return uuid.NewString(), nil
	}
	out, err := s.transcript.Append(ctx, e)
	if err != nil {
		return "", fmt.Errorf("write transcript: %w", err)
	}
	return out.UUID, nil
}

// recordMetadata appends a metadata entry; failures are logged, never fatal.
func (p *Persistence) recordMetadata(ctx context.Context, t transcript.Type, v any) {
	s := p.s
	if s.transcript == nil {
		return
	}
	raw, err := json.Marshal(v)
	if err == nil {
		_, err = s.transcript.Append(ctx, transcript.Entry{Type: t, Value: raw})
	}
	if err != nil {
		s.logger.Warn("record metadata", "type", t, "err", err)
	}
}

// TranscriptPath is where the session's transcript really is; empty when nothing is saved.
func (s *Session) TranscriptPath() string {
	if s.transcript == nil {
		return ""
	}
	return s.transcript.Path()
}

// useShellDir keeps the shell's cwd files in the session's folder, sweeping those a killed
// run left there (the session's lock is held, so none is in use), and clears stale ones an
// older keel left in the shared temporary directory.
func (p *Persistence) useShellDir(transcriptPath string) {
	s := p.s
	dir := filepath.Join(transcript.SessionDir(transcriptPath), "tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.logger.Warn("shell temp dir", "err", err)
		return
	}
	if n := shell.SweepCwdFiles(dir, 0); n > 0 {
		s.logger.Info("swept cwd files of a killed run", "n", n)
	}
	shell.SweepCwdFiles(os.TempDir(), shell.StaleCwdFileAge)
	s.jobs.SetTempDir(dir)
}

// resumeAt drops the resumed history after the assistant message ResumeSessionAt names.
func (p *Persistence) resumeAt(ctx context.Context) error {
	s := p.s
	at := s.opts.SDK.ResumeSessionAt
	if at == "" {
		return nil
	}
	s.mu.Lock()
	idx := slices.Index(s.uuids, at)
	if idx < 0 {
		s.mu.Unlock()
		return fmt.Errorf("--resume-session-at %s: no such message in the resumed session", at)
	}
	s.history, s.uuids = s.history[:idx+1:idx+1], s.uuids[:idx+1:idx+1]
	s.mu.Unlock()
	if s.transcript != nil {
		if err := s.transcript.Rewind(ctx, at); err != nil {
			return fmt.Errorf("--resume-session-at: %w", err)
		}
	}
	return nil
}
