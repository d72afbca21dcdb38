package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/message"
)

// State is a session rebuilt by replay.
type State struct {
	SessionID string
	// Chain is the live conversation, oldest first: the entries on the parentUuid path from
	// Leaf back to the first message or to the newest compaction boundary, which then comes
	// first. Entries of unknown types on the path are left out (they are in Unknown).
	Chain []Entry
	// Leaf is the entry the next chain entry will hang from.
	Leaf string
	// Metadata holds the newest value of each metadata type.
	Metadata map[Type]json.RawMessage
	// Unknown holds the raw lines of entries of types this keel does not know, as read (newest
	// region only: up to the compaction boundary), oldest first. They are skipped by replay
	// and copied by Fork, never dropped.
	Unknown [][]byte
	// TornTail is how many bytes at the end of the file were not a complete line. Resume cuts
	// them off; Load only reports them.
	TornTail int64
	// BadLines counts complete lines that were not entries; they are skipped.
	BadLines int
	// Dangling is set when the chain points at a parent the file does not have: the history
	// before it is lost (and Chain starts after it).
	Dangling string
	// Scanned is how many bytes replay read, for tests and diagnostics.
	Scanned int64
	// Started holds the tool_started entries of the calls the chain leaves without a result,
	// by tool_use id: those calls may have run before keel stopped. A call left without a
	// result and without an entry here never started.
	Started map[string]ToolStart

	// unknownAt[i] is how many Chain entries precede Unknown[i] in the file, so Fork can keep
	// the order (a newer keel may hang chain entries under an unknown one).
	unknownAt []int
}

// Boundary returns the compaction boundary the chain starts from, if any.
func (s *State) Boundary() (Entry, bool) {
	if len(s.Chain) > 0 && s.Chain[0].Type == TypeSummary {
		return s.Chain[0], true
	}
	return Entry{}, false
}

// Messages returns the user and assistant messages of the chain, oldest first; uuids[i] is the
// entry of msgs[i]. A compaction summary is not among them: see [State.Boundary].
func (s *State) Messages() (msgs []message.Message, uuids []string) {
	for _, e := range s.Chain {
		if (e.Type == TypeUser || e.Type == TypeAssistant) && e.Message != nil {
			msgs = append(msgs, *e.Message)
			uuids = append(uuids, e.UUID)
		}
	}
	return msgs, uuids
}

// Title returns the custom title, or "".
func (s *State) Title() string { return s.metaString(TypeCustomTitle) }

// Mode returns the permission mode last recorded, or "".
func (s *State) Mode() string { return s.metaString(TypeMode) }

// AgentName returns the agent name last recorded, or "".
func (s *State) AgentName() string { return s.metaString(TypeAgentName) }

// AgentColor returns the agent colour last recorded, or "".
func (s *State) AgentColor() string { return s.metaString(TypeAgentColor) }

// PRLink returns the linked pull request's URL, or "".
func (s *State) PRLink() string { return s.metaString(TypePRLink) }

// Todos returns the todo list last recorded (raw JSON, the shape the todo tool writes).
func (s *State) Todos() json.RawMessage { return s.Metadata[TypeTodos] }

// AgentSetting returns the agent settings last recorded (raw JSON).
func (s *State) AgentSetting() json.RawMessage { return s.Metadata[TypeAgentSetting] }

func (s *State) metaString(t Type) string {
	var v string
	_ = json.Unmarshal(s.Metadata[t], &v) // a value of another shape reads as unset
	return v
}

// rawLine is a line kept by replay until it is decoded.
type rawLine struct {
	line    []byte
	unknown bool
}

// Load replays the transcript at path without locking or changing it; a torn tail is reported
// in State.TornTail and skipped.
func Load(ctx context.Context, path string) (*State, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load transcript: %w", err)
	}
	defer f.Close()
	st, err := load(ctx, path, f)
	if err != nil {
		return nil, fmt.Errorf("load transcript %s: %w", path, err)
	}
	return st, nil
}

func load(ctx context.Context, path string, f *os.File) (*State, error) {
	if err := checkVersion(path, f); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	good, err := lastLineEnd(f, fi.Size())
	if err != nil {
		return nil, err
	}
	st, err := replay(ctx, f, good)
	if err != nil {
		return nil, err
	}
	st.TornTail = fi.Size() - good
	st.idFromName(path)
	return st, nil
}

// idFromName names the session after its file when no complete line did: a crash while the
// first line was written leaves a file without one.
func (s *State) idFromName(path string) {
	if s.SessionID != "" {
		return
	}
	if id := strings.TrimSuffix(filepath.Base(path), ".jsonl"); CheckID(id) == nil {
		s.SessionID = id
	}
}

// checkVersion reads the first line; a meta line with a newer schema version is refused. A
// file without a meta line (written by another tool) is read as version 1.
func checkVersion(path string, r io.ReaderAt) error {
	lr := newLineReader(io.NewSectionReader(r, 0, 1<<62), 0)
	line, _, err := lr.next()
	if err != nil {
		return nil // empty or torn: nothing to check
	}
	h, err := parseHeader(line)
	if err != nil || h.Type != TypeMeta {
		return nil
	}
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		return fmt.Errorf("%s:1: meta entry: %w", path, err)
	}
	if e.SchemaVersion > SchemaVersion || e.SchemaVersion < 1 {
		return &VersionError{Path: path, Version: e.SchemaVersion}
	}
	return nil
}

// replay rebuilds the state from r[0:end], reading backwards. The newest chain or rewind entry
// fixes the leaf; from there it follows parentUuid, keeping the raw lines of the chain (the
// live history) and only the headers of everything else. It stops at a compaction boundary on
// the chain, whose Metadata stands in for everything older.
func replay(ctx context.Context, r io.ReaderAt, end int64) (*State, error) {
	st := &State{Metadata: map[Type]json.RawMessage{}}
	var (
		leafKnown bool
		chainDone bool
		wanted    string
		raw       []rawLine // chain and unknown lines, newest first
		starts    map[string][]span
	)
	err := scanBackward(ctx, r, end, func(line []byte, off int64) error {
		st.Scanned = end - off
		h, err := parseHeader(line)
		if err != nil {
			st.BadLines++
			return nil
		}
		switch kindOf(h.Type) {
		case kindToolStarted:
			if starts == nil {
				starts = map[string][]span{}
			}
			starts[h.Parent] = append(starts[h.Parent], span{off, len(line)})
		case kindMeta:
			if st.SessionID == "" {
				var e Entry
				if json.Unmarshal(line, &e) == nil {
					st.SessionID = e.SessionID
				}
			}
		case kindRewind:
			if !leafKnown {
				var e Entry
				if err := json.Unmarshal(line, &e); err != nil {
					st.BadLines++
					return nil
				}
				leafKnown, wanted = true, e.LeafUUID
				st.Leaf = wanted
				chainDone = wanted == ""
			}
		case kindMetadata:
			if _, ok := st.Metadata[h.Type]; !ok {
				var e Entry
				if err := json.Unmarshal(line, &e); err != nil {
					st.BadLines++
					return nil
				}
				st.Metadata[h.Type] = e.Value
			}
		case kindChain, kindUnknown:
			unknown := kindOf(h.Type) == kindUnknown
			if !leafKnown && !unknown {
				leafKnown, wanted = true, h.UUID
				st.Leaf = wanted
			}
			onChain := leafKnown && !chainDone && h.UUID != "" && h.UUID == wanted
			if !onChain {
				if unknown {
					raw = append(raw, rawLine{line: slices.Clone(line), unknown: true})
				}
				return nil
			}
			raw = append(raw, rawLine{line: slices.Clone(line), unknown: unknown})
			wanted = h.Parent
			if h.Type == TypeSummary {
				return errStop
			}
			chainDone = wanted == ""
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if !chainDone && leafKnown && !errors.Is(err, errStop) {
		st.Dangling = wanted
	}
	slices.Reverse(raw)
	st.Chain = make([]Entry, 0, len(raw))
	for i, r := range raw {
		raw[i] = rawLine{} // let the raw bytes go as they are decoded
		line := r.line
		if r.unknown {
			st.Unknown = append(st.Unknown, line)
			st.unknownAt = append(st.unknownAt, len(st.Chain))
			continue
		}
		e, err := decodeEntry(line)
		if err != nil {
			st.BadLines++ // a damaged line on the chain: skip it, keep the rest
			continue
		}
		if kindOf(e.Type) != kindChain {
			continue
		}
		if st.SessionID == "" {
			st.SessionID = e.SessionID
		}
		if e.Type == TypeSummary {
			for t, v := range e.Metadata {
				if _, ok := st.Metadata[t]; !ok {
					st.Metadata[t] = v
				}
			}
		}
		st.Chain = append(st.Chain, e)
	}
	if err := resolveStarts(r, st, starts); err != nil {
		return nil, err
	}
	return st, nil
}
