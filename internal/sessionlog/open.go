package sessionlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/snapshot"
	"github.com/keel-dev/keel/internal/transcript"
)

// Options say which transcript a session opens.
type Options struct {
	// Homes are where sessions are kept, the first written to; a resume or --continue
	// looks in each.
	Homes []string
	// FileHistoryHome keeps the file-history snapshots.
	FileHistoryHome string
	// Cwd is the session's working directory, which picks its project folder.
	Cwd string
	// SessionID names a new or forked session.
	SessionID string
	// Resume names the session to resume (an id, a path or a title); Continue resumes the
	// newest of the project; ForkSession continues either as a new session.
	Resume      string
	Continue    bool
	ForkSession bool
	// ResumeAt resumes the branch holding this assistant message, when the default replay
	// leaves it aside.
	ResumeAt string
	// GitBranch and Version go into each entry.
	GitBranch, Version string
	// Now is the clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Opened is a session's transcript as it opened.
type Opened struct {
	Log *Log
	// State is what replay rebuilt; nil for a new session.
	State *transcript.State
	// SessionID is the session's id: a resumed session keeps the one in its file.
	SessionID string
	// Snapshots is the session's file history.
	Snapshots *snapshot.Store
	// ShellDir keeps the shell's cwd files in the session's folder; empty when it could not
	// be made.
	ShellDir string
}

// Open creates, resumes or forks the session's transcript.
func Open(ctx context.Context, o Options) (Opened, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	projectDirs := transcript.ProjectDirs(o.Homes, o.Cwd)
	src := ""
	switch {
	case o.Resume != "":
		p, err := transcript.FindIn(projectDirs, o.Resume)
		if err != nil {
			return Opened{}, err
		}
		src = p
	case o.Continue:
		latest, err := transcript.LatestIn(projectDirs)
		if err != nil {
			return Opened{}, fmt.Errorf("continue: no earlier session in %s: %w", o.Cwd, err)
		}
		src = latest.Path
	}
	opts := transcript.Options{SessionID: o.SessionID, CWD: o.Cwd, GitBranch: o.GitBranch, Version: o.Version, Logger: o.Logger, Now: o.Now}
	out := Opened{SessionID: o.SessionID}
	var (
		w   *transcript.Writer
		err error
	)
	switch {
	case src == "":
		w, err = transcript.Create(ctx, transcript.SessionPath(o.Homes[0], o.Cwd, o.SessionID), opts)
	case o.ForkSession:
		w, out.State, err = transcript.Fork(ctx, src, transcript.SessionPath(o.Homes[0], o.Cwd, o.SessionID), opts)
	default:
		// The session keeps its id: Resume takes it from the file. A ResumeAt on a branch
		// the default replay leaves aside resumes that branch.
		opts.SessionID, opts.Leaf = "", o.ResumeAt
		w, out.State, err = resumeLocked(ctx, src, opts)
		if err == nil {
			out.SessionID = out.State.SessionID
		}
		if errors.Is(err, transcript.ErrLocked) {
			return Opened{}, fmt.Errorf("resume %s: the session is open in another process; use --fork-session to continue it as a new session", src)
		}
	}
	if err != nil {
		return Opened{}, err
	}
	out.Log = NewLog(w, o.Logger)
	out.ShellDir = shellDir(w.Path(), o.Logger)
	if out.Snapshots, err = snapshot.Open(o.FileHistoryHome, out.SessionID); err != nil {
		return Opened{}, fmt.Errorf("open file history: %w", err)
	}
	return out, nil
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

// shellDir makes the folder that keeps the shell's cwd files beside the transcript,
// sweeping those a killed run left there (the session's lock is held, so none is in use),
// and clears stale ones an older keel left in the shared temporary directory.
func shellDir(transcriptPath string, logger *slog.Logger) string {
	dir := filepath.Join(transcript.SessionDir(transcriptPath), "tmp")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		logger.Warn("shell temp dir", "err", err)
		return ""
	}
	if n := shell.SweepCwdFiles(dir, 0); n > 0 {
		logger.Info("swept cwd files of a killed run", "n", n)
	}
	shell.SweepCwdFiles(os.TempDir(), shell.StaleCwdFileAge)
	return dir
}
