// Package sessionlog is a session's transcript as the session uses it: created, resumed or
// forked when it opens ([Open]), the conversation rebuilt from it and repaired after a crash
// ([Replay], [ResumeAt]), entries and metadata recorded, the title set ([Log]). The store
// itself — the file format, replay, locking — is internal/transcript's.
//
// The session gives it what it uses (its options, a clock, a logger) and applies what it
// hands back (the history, the notices, the recorded todos and mode); nothing here reaches
// back into the session.
package sessionlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/transcript"
)

// AgentSetting is what the main agent's transcript records once, at its start, so a
// resumed session renders the same system prompt (a fresh date or git status would miss
// the cache).
type AgentSetting struct {
	Environment *prompt.Environment `json:"environment,omitempty"`
	Model       string              `json:"model,omitempty"`
}

// Log records a session's entries in its transcript. A nil Log, or one without a writer,
// records nothing: entries still get ids, so a session without persistence runs alike.
type Log struct {
	w      *transcript.Writer
	logger *slog.Logger
}

// NewLog records in w (nil: nothing); logger hears of metadata that could not be written.
func NewLog(w *transcript.Writer, logger *slog.Logger) *Log {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Log{w: w, logger: logger}
}

// Writer is the transcript written to, nil when nothing is persisted.
func (l *Log) Writer() *transcript.Writer {
	if l == nil {
		return nil
	}
	return l.w
}

// Path is where the transcript is; empty when nothing is saved.
func (l *Log) Path() string {
	if l.Writer() == nil {
		return ""
	}
	return l.w.Path()
}

// Record appends one entry and returns its id; without a transcript the id is a fresh one.
func (l *Log) Record(ctx context.Context, e transcript.Entry) (string, error) {
	if l.Writer() == nil {
		return uuid.NewString(), nil
	}
	out, err := l.w.Append(ctx, e)
	if err != nil {
		return "", fmt.Errorf("write transcript: %w", err)
	}
	return out.UUID, nil
}

// RecordMetadata appends a metadata entry; failures are logged, never fatal.
func (l *Log) RecordMetadata(ctx context.Context, t transcript.Type, v any) {
	if l.Writer() == nil {
		return
	}
	raw, err := json.Marshal(v)
	if err == nil {
		_, err = l.w.Append(ctx, transcript.Entry{Type: t, Value: raw})
	}
	if err != nil {
		l.logger.Warn("record metadata", "type", t, "err", err)
	}
}

// SetTitle names the session in the transcript (`/rename`): session lists show the title,
// and `--resume TITLE` finds the session by it.
func (l *Log) SetTitle(ctx context.Context, title string) error {
	if l.Writer() == nil {
		return errors.New("this session keeps no transcript to name")
	}
	raw, err := json.Marshal(title)
	if err != nil {
		return err
	}
	if _, err := l.w.Append(ctx, transcript.Entry{Type: transcript.TypeCustomTitle, Value: raw}); err != nil {
		return fmt.Errorf("name the session: %w", err)
	}
	return l.w.Sync(ctx)
}
