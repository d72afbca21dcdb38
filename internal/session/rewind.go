package session

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/undo"
)

// Undo takes the session back (internal/undo): file-history snapshots of the tools' edits,
// the shadow repository that covers the shell, the conversation cut at a prompt.
type Undo = undo.Undo

// RewindReport says what a rewind did; ShadowRewind what it restored from the shadow
// repository.
type (
	RewindReport = undo.Report
	ShadowRewind = undo.ShadowRewind
)

// Undo returns what takes the session back to an earlier prompt.
func (s *Session) Undo() *Undo { return s.undo }

// newUndo wires the undo to the session's file history, shadow repositories, history,
// transcript and file views. The session's id and file history are known once its
// transcript opened, hence after it.
func newUndo(s *Session) *undo.Undo {
	c := undo.Config{
		Home: s.opts.Home, Session: s.id, Offline: s.opts.Offline, UserHome: userHome(),
		Cwd: s.Cwd, Exclude: s.shadowExcludes,
		RecordSnapshot: func(id string) {
			s.persist.recordMetadata(context.Background(), transcript.TypeFileHistorySnapshot, map[string]string{"id": id})
		},
		Warn: func(text string) { s.emit(event.Notice{Level: "warn", Text: text}) },
		Acquire: func() (func(), error) {
			if !s.acquire() {
				return nil, ErrBusy
			}
			return s.release, nil
		},
		History: s.persist.entries,
		Cut: func(n int) []message.Message {
			s.mu.Lock()
			defer s.mu.Unlock()
			dropped := s.history[n:]
			s.history, s.uuids = s.history[:n:n], s.uuids[:n:n]
			return dropped
		},
		Branch: func(ctx context.Context, leaf string) error {
			if s.transcript == nil {
				return nil
			}
			if err := s.transcript.Rewind(ctx, leaf); err != nil {
				return fmt.Errorf("rewind transcript: %w", err)
			}
			return s.transcript.Sync(ctx)
		},
		Forget:   s.files.ForgetViews,
		Announce: func(reason string) { s.watch.Announce(reason) },
		Logger:   s.logger,
	}
	if s.snapshots != nil {
		c.Files = s.snapshots
	}
	return undo.New(c)
}
