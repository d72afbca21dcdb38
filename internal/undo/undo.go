// Package undo takes a session back to an earlier prompt: the files its tools edited come
// back from the file history (internal/snapshot), the directory the prompt ran in is restored
// exactly from its shadow checkpoint (internal/shadow), which covers what shell commands,
// builds and git changed there too, and the conversation is cut just before the prompt.
//
// Each prompt opens a file-history snapshot and captures its directory before the model
// acts; the first capture is made in the background as the session opens. What it needs of
// the session it names in [Config], as fields and functions: the package knows no session,
// so an undo can be built and tested on its own.
package undo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/shadow"
	"github.com/keel-dev/keel/internal/snapshot"
	"github.com/keel-dev/keel/internal/transcript"
)

// Store is the file history of the tools' edits; *[snapshot.Store] is one.
type Store interface {
	Begin(id string) error
	Track(path string) error
	Unrecoverable(a snapshot.Action) error
	Restore(id string) (snapshot.Report, error)
	Snapshots() []snapshot.Snapshot
}

var _ Store = (*snapshot.Store)(nil)

// Config is what an undo needs. History and Cut are required; a nil Files keeps no file
// history, an empty Home no shadow repositories, and any other nil function is a step
// skipped.
type Config struct {
	// Files is the session's file history; nil when it keeps none (no transcript).
	Files Store
	// Home is keel's home, where the shadow repositories and their marks are kept; Session
	// names this session's marks.
	Home, Session string
	// Offline is a maintenance session (keel rewind): it makes no capture as it opens.
	Offline bool
	// UserHome is never captured, nor the root: their captures would walk everything the
	// user owns.
	UserHome string
	// Cwd is the session's working directory now.
	Cwd func() string
	// Exclude is what the shadow repositories leave out of a work tree, as gitignore lines
	// anchored at it ([shadow.Options.Exclude]): what the sandbox masks there.
	Exclude func(workTree string) []string
	// RecordSnapshot names a prompt's file-history snapshot in the transcript, so a reader of
	// the file alone can pair prompts with it.
	RecordSnapshot func(id string)
	// Warn tells the user of a problem: the first capture that failed.
	Warn func(text string)
	// Acquire takes the session for a rewind, which happens between turns; it returns the
	// release, or an error when the session is busy.
	Acquire func() (release func(), err error)

	// History is a copy of the conversation with the transcript entry id of each message.
	History func() ([]message.Message, []string)
	// Cut keeps the conversation's first n messages (and their ids) and returns those it
	// dropped.
	Cut func(n int) []message.Message
	// Branch moves the transcript's branch back to leaf ("" for its start) and syncs it.
	Branch func(ctx context.Context, leaf string) error
	// Forget drops the agents' views of the files, which the cut conversation held.
	Forget func()
	// Announce tells the cache watcher the prompt's prefix changes on purpose.
	Announce func(reason string)
	Logger   *slog.Logger
}

// Undo is a session's undo. It is safe for concurrent use.
type Undo struct {
	c Config
	// shadow is the undo that covers the shell (shadow.go).
	shadow shadowState
}

// shadowState is the undo that covers the shell: a shadow repository per working directory
// the session prompted in, and the marks pairing each prompt with the checkpoint its
// directory was at when it started.
type shadowState struct {
	// mu guards repos, marks and warned.
	mu    sync.Mutex
	repos map[string]*shadow.Repo
	marks *shadow.Marks
	// warned says a capture failure was reported; later ones are only logged.
	warned bool
	// warming is the first capture, started when the session opens (Warm); stop cancels it.
	warming sync.WaitGroup
	stop    context.CancelFunc
}

// New returns the undo of c.
func New(c Config) *Undo {
	if c.Cwd == nil {
		c.Cwd = func() string { return "" }
	}
	if c.RecordSnapshot == nil {
		c.RecordSnapshot = func(string) {}
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	if c.Acquire == nil {
		c.Acquire = func() (func(), error) { return func() {}, nil }
	}
	if c.Forget == nil {
		c.Forget = func() {}
	}
	if c.Announce == nil {
		c.Announce = func(string) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return &Undo{c: c}
}

// BeginTurn opens the file-history snapshot of the prompt whose message has the transcript id
// uuid, and captures its directory: edits in the turn are tracked into the snapshot, and the
// capture is what a rewind to the prompt restores.
func (u *Undo) BeginTurn(uuid string) {
	if u.c.Files == nil {
		return
	}
	if err := u.c.Files.Begin(uuid); err != nil {
		u.c.Logger.Warn("begin file-history snapshot", "err", err)
		return
	}
	u.c.RecordSnapshot(uuid)
	u.captureTurn(context.Background(), uuid)
}

// TrackEdit stores a file's content before a tool changes it.
func (u *Undo) TrackEdit(path string) {
	if u.c.Files == nil {
		return
	}
	if err := u.c.Files.Track(path); err != nil && !errors.Is(err, snapshot.ErrNoTurn) {
		u.c.Logger.Warn("snapshot file before edit", "path", path, "err", err)
	}
}

// Unrecoverable records a change rewind cannot undo (a shell command, an MCP call).
func (u *Undo) Unrecoverable(tool, description string) {
	if u.c.Files == nil {
		return
	}
	if err := u.c.Files.Unrecoverable(snapshot.Action{Tool: tool, Description: description}); err != nil && !errors.Is(err, snapshot.ErrNoTurn) {
		u.c.Logger.Warn("record unrecoverable change", "err", err)
	}
}

// Report says what a rewind did.
type Report struct {
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
func (u *Undo) Rewind(ctx context.Context, toUUID string, code, conversation bool) (Report, error) {
	release, err := u.c.Acquire()
	if err != nil {
		return Report{}, err
	}
	defer release()
	var rep Report
	_, ids := u.c.History()
	idx := slices.Index(ids, toUUID)
	if idx < 0 {
		return rep, fmt.Errorf("rewind: no message %s in this session's history", toUUID)
	}
	if code {
		if u.c.Files == nil {
			return rep, errors.New("rewind: this session keeps no file history")
		}
		files, ferr := u.c.Files.Restore(toUUID)
		rep.Files = files
		// After the file history, so the directory ends exactly as its checkpoint says; and
		// whatever of it failed, since the checkpoint puts back those files in the directory
		// too, and takes away a link a command put on their way (which the file history
		// refuses to write through).
		sh, _, err := u.rewindShadow(ctx, toUUID)
		rep.Shadow = sh
		if ferr != nil || err != nil {
			if ferr != nil {
				ferr = fmt.Errorf("rewind files: %w", ferr)
			}
			if err != nil {
				err = fmt.Errorf("rewind the directory: %w", err)
			}
			return rep, errors.Join(ferr, err)
		}
	}
	if conversation {
		leaf := ""
		if idx > 0 {
			leaf = ids[idx-1]
		}
		for _, m := range u.c.Cut(idx) {
			if m.Role != message.RoleUser || !prompt.OnlyReminders(m.Content) { // keel's own notes are no messages to the user
				rep.Messages++
			}
		}
		u.c.Forget()
		if u.c.Branch != nil {
			if err := u.c.Branch(ctx, leaf); err != nil {
				return rep, err
			}
		}
		u.c.Announce("rewind")
	}
	return rep, nil
}

// UserMessages lists the user prompts of the history with their uuids, oldest first: the
// points a rewind can go back to. Messages the harness added (system reminders) are not prompts.
func (u *Undo) UserMessages() []transcript.Entry {
	history, ids := u.c.History()
	var out []transcript.Entry
	for i, m := range history {
		if m.Role != "user" || i >= len(ids) {
			continue
		}
		if text := m.TextOf(); text != "" && !isToolResults(m.Content) && !prompt.OnlyReminders(m.Content) {
			msg := m
			out = append(out, transcript.Entry{Type: transcript.TypeUser, UUID: ids[i], Message: &msg})
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
	if u.c.Files == nil {
		return nil, errors.New("this session keeps no file history")
	}
	if dryRun {
		snaps := u.c.Files.Snapshots()
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
