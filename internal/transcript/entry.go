// Package transcript stores a session as one append-only JSONL file and rebuilds its state by
// replay. The format is described in SCHEMA.md beside this file.
//
// Every line starts with `type`, `uuid` and `parentUuid`, in that order, so readers can classify
// a line from its first hundred bytes without decoding the payload. A [Writer] owns one file
// through one goroutine, writes each entry with one write call and syncs once per turn; [Load]
// reads from the end backwards to the newest compaction boundary and decodes only the live chain,
// so resume costs the live history, not the file size.
package transcript

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/keel-dev/keel/internal/message"
)

// SchemaVersion is the version of the format this package writes and the newest it reads. It is
// recorded on the first line of every file (a `meta` entry).
const SchemaVersion = 1

// Type is an entry's type.
type Type string

// Chain entries: nodes of the conversation tree, linked by parentUuid.
const (
	TypeUser      Type = "user"
	TypeAssistant Type = "assistant"
	TypeSystem    Type = "system"
	// TypeSummary is a compaction boundary: its Summary replaces everything before it, and
	// replay never reads past it.
	TypeSummary Type = "summary"
)

// Control entries.
const (
	// TypeMeta is the first line of every file: the schema version.
	TypeMeta Type = "meta"
	// TypeToolStarted says a call with side effects is about to run: it is appended and synced
	// before the call starts, with ParentUUID naming the assistant entry of the call, so a
	// resume after a crash can tell a call that may have run from one that did not.
	TypeToolStarted Type = "tool_started"
	// TypeRewind moves the conversation's leaf back to LeafUUID (empty: before the first
	// message). The next chain entry's parentUuid is that leaf; the abandoned branch stays in
	// the file.
	TypeRewind Type = "rewind"
)

// Metadata entries: replay keeps the newest Value of each type.
const (
	TypeAgentName           Type = "agent-name"
	TypeAgentColor          Type = "agent-color"
	TypeAgentSetting        Type = "agent-setting"
	TypeMode                Type = "mode"
	TypePRLink              Type = "pr-link"
	TypeCustomTitle         Type = "custom-title"
	TypeFileHistorySnapshot Type = "file-history-snapshot"
	TypeTodos               Type = "todos"
	// TypeWorktree is the worktree the main session moved into with EnterWorktree (null
	// after ExitWorktree), so a resume lands in it.
	TypeWorktree Type = "worktree-state"
)

// kind classifies a type for replay.
type kind int

const (
	kindUnknown kind = iota
	kindChain
	kindMeta
	kindRewind
	kindMetadata
	kindToolStarted
	kindRecord
	kindCleared
)

func kindOf(t Type) kind {
	switch t {
	case TypeUser, TypeAssistant, TypeSystem, TypeSummary:
		return kindChain
	case TypeMeta:
		return kindMeta
	case TypeRewind:
		return kindRewind
	case TypeToolStarted:
		return kindToolStarted
	case TypeUsage, TypeCacheBreak:
		return kindRecord
	case TypeCleared:
		return kindCleared
	case TypeAgentName, TypeAgentColor, TypeAgentSetting, TypeMode, TypePRLink, TypeCustomTitle,
		TypeFileHistorySnapshot, TypeTodos, TypeWorktree:
		return kindMetadata
	}
	return kindUnknown
}

// IsChain reports whether entries of type t are nodes of the conversation tree.
func (t Type) IsChain() bool { return kindOf(t) == kindChain }

// IsMetadata reports whether t is a metadata type whose newest value replay keeps.
func (t Type) IsMetadata() bool { return kindOf(t) == kindMetadata }

// Entry is one line of a transcript. Only the payload fields of its Type are set.
type Entry struct {
	Type Type
	UUID string
	// ParentUUID links a chain entry to the one before it; empty for the first message (and
	// for non-chain entries), written as null.
	ParentUUID string
	SessionID  string
	Timestamp  time.Time
	CWD        string
	GitBranch  string
	Version    string

	// SchemaVersion is set on the meta entry only.
	SchemaVersion int
	// Message is the payload of user and assistant entries.
	Message *message.Message
	// Subtype and Text are the payload of system entries (informational; never sent).
	Subtype string
	Text    string
	// Summary is the payload of a compaction boundary.
	Summary string
	// Metadata on a compaction boundary carries the newest value of every metadata type, so
	// replay, which stops at the boundary, still finds values set before it. The [Writer]
	// fills it in.
	Metadata map[Type]json.RawMessage
	// LeafUUID is the payload of a rewind entry.
	LeafUUID string
	// Value is the payload of metadata entries; its shape per type is in SCHEMA.md.
	Value json.RawMessage
	// ToolUseID and ToolName are the payload of a tool_started entry.
	ToolUseID string
	ToolName  string
}

// wireEntry fixes the field order on disk: the header fields first.
type wireEntry struct {
	Type          Type                     `json:"type"`
	UUID          string                   `json:"uuid"`
	ParentUUID    *string                  `json:"parentUuid"`
	SessionID     string                   `json:"sessionId"`
	Timestamp     time.Time                `json:"timestamp"`
	CWD           string                   `json:"cwd,omitempty"`
	GitBranch     string                   `json:"gitBranch,omitempty"`
	Version       string                   `json:"version,omitempty"`
	SchemaVersion int                      `json:"schemaVersion,omitempty"`
	Message       *message.Message         `json:"message,omitempty"`
	Subtype       string                   `json:"subtype,omitempty"`
	Text          string                   `json:"text,omitempty"`
	Summary       string                   `json:"summary,omitempty"`
	Metadata      map[Type]json.RawMessage `json:"metadata,omitempty"`
	LeafUUID      *string                  `json:"leafUuid,omitempty"`
	Value         json.RawMessage          `json:"value,omitempty"`
	// CustomTitle repeats a custom-title's value as Claude Code writes it, so the Agent
	// SDK's getSessionInfo and listSessions see titles keel set (and keel theirs).
	CustomTitle string `json:"customTitle,omitempty"`
	// IsMeta marks a user entry no person typed (system reminders), as Claude Code marks
	// them: the SDK's getSessionMessages leaves them out. Written only; replay ignores it.
	IsMeta    bool   `json:"isMeta,omitempty"`
	ToolUseID string `json:"toolUseId,omitempty"`
	ToolName  string `json:"toolName,omitempty"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func derefStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// MarshalJSON writes the entry header-first.
func (e Entry) MarshalJSON() ([]byte, error) {
	w := wireEntry{
		Type: e.Type, UUID: e.UUID, ParentUUID: strPtr(e.ParentUUID), SessionID: e.SessionID,
		Timestamp: e.Timestamp, CWD: e.CWD, GitBranch: e.GitBranch, Version: e.Version,
		SchemaVersion: e.SchemaVersion, Message: e.Message, Subtype: e.Subtype, Text: e.Text,
		Summary: e.Summary, Metadata: e.Metadata, Value: e.Value, ToolUseID: e.ToolUseID, ToolName: e.ToolName,
	}
	if e.Type == TypeUser {
		w.IsMeta = onlyReminders(e.Message)
	}
	if e.Type == TypeCustomTitle {
		_ = json.Unmarshal(e.Value, &w.CustomTitle) // a value of another shape has no title to repeat
	}
	if e.Type == TypeRewind {
		// A rewind to before the first message is an explicit null, not a missing field.
		empty := ""
		w.LeafUUID = &empty
		if e.LeafUUID != "" {
			w.LeafUUID = &e.LeafUUID
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an entry in any field order.
func (e *Entry) UnmarshalJSON(b []byte) error {
	d, err := decodeEntry(b)
	*e = d
	return err
}

// decodeEntry decodes a line. Replay calls it directly rather than json.Unmarshal(line, &e),
// which would validate the line twice (once for Entry, once for wireEntry). A big line has
// its big strings decoded apart (see bigLine).
func decodeEntry(b []byte) (Entry, error) {
	if len(b) >= bigLine {
		if e, ok := decodeBigEntry(b); ok {
			return e, nil
		}
	}
	return decodeSmall(b)
}

func decodeSmall(b []byte) (Entry, error) {
	var w wireEntry
	if err := json.Unmarshal(b, &w); err != nil {
		// A line of Claude Code's may hold shapes of its own (see normalizeForeign).
		n, ok := normalizeForeign(b)
		if !ok || json.Unmarshal(n, &w) != nil {
			return Entry{}, err
		}
	}
	if w.Type == TypeCustomTitle && len(w.Value) == 0 && w.CustomTitle != "" {
		w.Value, _ = json.Marshal(w.CustomTitle)
	}
	return Entry{
		Type: w.Type, UUID: w.UUID, ParentUUID: derefStr(w.ParentUUID), SessionID: w.SessionID,
		Timestamp: w.Timestamp, CWD: w.CWD, GitBranch: w.GitBranch, Version: w.Version,
		SchemaVersion: w.SchemaVersion, Message: w.Message, Subtype: w.Subtype, Text: w.Text,
		Summary: w.Summary, Metadata: w.Metadata, LeafUUID: derefStr(w.LeafUUID), Value: w.Value,
		ToolUseID: w.ToolUseID, ToolName: w.ToolName,
	}, nil
}

// encodeLine returns the entry as one line, newline included.
func encodeLine(e Entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s entry %s: %w", e.Type, e.UUID, err)
	}
	return append(b, '\n'), nil
}

// VersionError reports a file written by a newer keel.
type VersionError struct {
	Path    string
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s: transcript schema version %d is newer than this keel reads (%d); upgrade keel",
		e.Path, e.Version, SchemaVersion)
}
