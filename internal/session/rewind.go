package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/snapshot"
	"github.com/keel-dev/keel/internal/transcript"
)

// Undo returns what takes the session back to an earlier prompt.
func (s *Session) Undo() *Undo { return &s.undo }

// beginSnapshot opens the file-history snapshot of the user turn that starts with the message
// uuid; edits in the turn are tracked into it.
func (u *Undo) beginSnapshot(uuid string) {
	s := u.s
	if s.snapshots == nil {
		return
	}
	if err := s.snapshots.Begin(uuid); err != nil {
		s.logger.Warn("begin file-history snapshot", "err", err)
		return
	}
	// The transcript names the snapshot, so a reader of the file alone can pair turns with it.
	s.persist.recordMetadata(context.Background(), transcript.TypeFileHistorySnapshot, map[string]string{"id": uuid})
	u.captureTurn(context.Background(), uuid)
}

// trackEdit stores a file's content before a tool changes it.
func (u *Undo) trackEdit(path string) {
	s := u.s
	if s.snapshots == nil {
		return
	}
	if err := s.snapshots.Track(path); err != nil && !errors.Is(err, snapshot.ErrNoTurn) {
		s.logger.Warn("snapshot file before edit", "path", path, "err", err)
	}
}

// noteUnrecoverable records a change rewind cannot undo (a shell command, an MCP call).
func (u *Undo) noteUnrecoverable(tool, description string) {
	s := u.s
	if s.snapshots == nil {
		return
	}
	if err := s.snapshots.Unrecoverable(snapshot.Action{Tool: tool, Description: description}); err != nil && !errors.Is(err, snapshot.ErrNoTurn) {
		s.logger.Warn("record unrecoverable change", "err", err)
	}
}

// RewindReport says what a rewind did.
type RewindReport struct {
	// Files is the file-history restore, when code was rewound.
	Files snapshot.Report
	// Shadow is the restore of the prompt's directory from the shadow repository, which
	// undoes what shell commands changed there too; nil when the prompt has no checkpoint.
	Shadow *ShadowRewind
	// Messages is how many history messages were dropped, when the conversation was rewound.
	Messages int
}

// Rewind moves the session back to just before the user message with the given transcript
// uuid: the files (code), the conversation, or both. The files Write and Edit changed come
// back from the file history; then the directory the prompt ran in is restored exactly from
// its shadow checkpoint, which covers shell commands, builds and git too. Changes outside it
// by shell commands or MCP tools cannot be undone; the report lists them.
func (u *Undo) Rewind(ctx context.Context, toUUID string, code, conversation bool) (RewindReport, error) {
	s := u.s
	if !s.acquire() {
		return RewindReport{}, ErrBusy
	}
	defer s.release()
	var rep RewindReport
	s.mu.Lock()
	idx := slices.Index(s.uuids, toUUID)
	s.mu.Unlock()
	if idx < 0 {
		return rep, fmt.Errorf("rewind: no message %s in this session's history", toUUID)
	}
	if code {
		if s.snapshots == nil {
			return rep, errors.New("rewind: this session keeps no file history")
		}
		files, err := s.snapshots.Restore(toUUID)
		rep.Files = files
		if err != nil {
			return rep, fmt.Errorf("rewind files: %w", err)
		}
		// After the file history, so the directory ends exactly as its checkpoint says.
		sh, _, err := u.rewindShadow(ctx, toUUID)
		rep.Shadow = sh
		if err != nil {
			return rep, fmt.Errorf("rewind the directory: %w", err)
		}
	}
	if conversation {
		s.mu.Lock()
		leaf := ""
		if idx > 0 {
			leaf = s.uuids[idx-1]
		}
		for _, m := range s.history[idx:] {
			if m.Role != message.RoleUser || !prompt.OnlyReminders(m.Content) { // keel's own notes are no messages to the user
				rep.Messages++
			}
		}
		s.history, s.uuids = s.history[:idx:idx], s.uuids[:idx:idx]
		s.mu.Unlock()
		s.files.ForgetViews()
		if s.transcript != nil {
			if err := s.transcript.Rewind(ctx, leaf); err != nil {
				return rep, fmt.Errorf("rewind transcript: %w", err)
			}
			if err := s.transcript.Sync(ctx); err != nil {
				return rep, err
			}
		}
		s.watch.Announce("rewind")
	}
	return rep, nil
}

// UserMessages lists the user prompts of the history with their uuids, oldest first: the
// points a rewind can go back to. Messages the harness added (system reminders) are not prompts.
func (u *Undo) UserMessages() []transcript.Entry {
	s := u.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []transcript.Entry
	for i, m := range s.history {
		if m.Role != "user" || i >= len(s.uuids) {
			continue
		}
		if text := m.TextOf(); text != "" && !isToolResults(m.Content) && !prompt.OnlyReminders(m.Content) {
			msg := m
			out = append(out, transcript.Entry{Type: transcript.TypeUser, UUID: s.uuids[i], Message: &msg})
		}
	}
	return out
}

func isToolResults(blocks []message.Block) bool {
	for _, b := range blocks {
		if b.Type == message.TypeToolResult {
			return true
		}
	}
	return false
}

// RewindFiles puts the files back as they were before the prompt with transcript id
// userMessageID; with dryRun it only lists what would change. The conversation is kept.
func (u *Undo) RewindFiles(ctx context.Context, userMessageID string, dryRun bool) ([]string, error) {
	s := u.s
	if s.snapshots == nil {
		return nil, errors.New("this session keeps no file history")
	}
	if dryRun {
		snaps := s.snapshots.Snapshots()
		k := slices.IndexFunc(snaps, func(sn snapshot.Snapshot) bool { return sn.ID == userMessageID })
		if k < 0 {
			return nil, fmt.Errorf("no file history for message %s", userMessageID)
		}
		seen := map[string]bool{}
		for _, sn := range snaps[k:] {
			for _, f := range sn.Files {
				seen[f.Path] = true
			}
		}
		out := make([]string, 0, len(seen))
		for p := range seen {
			out = append(out, p)
		}
		sort.Strings(out)
		return out, nil
	}
	rep, err := u.Rewind(ctx, userMessageID, true, false)
	changed := append(append(rep.Files.Restored, rep.Files.Deleted...), rep.Files.Failed...)
	sort.Strings(changed)
	return changed, err
}
