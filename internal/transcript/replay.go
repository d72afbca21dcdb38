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
	// Repairs says what was wrong with the file's parent links and how replay read it anyway;
	// [Repairs.String] is the notice to show.
	Repairs Repairs
	// Scanned is how many bytes replay read, for tests and diagnostics.
	Scanned int64
	// Started holds the tool_started entries of the calls the chain leaves without a result,
	// by tool_use id: those calls may have run before keel stopped. A call left without a
	// result and without an entry here never started.
	Started map[string]ToolStart
	// Cleared maps the tool_use ids whose results the agent's context holds as stubs (cleared
	// entries newer than the boundary) to the stub text; see [State.Context].
	Cleared map[string]string

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
	st, err := replay(ctx, f, good, "")
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
	lr.max = indexLineMax
	line, _, err := lr.next()
	if err != nil || lr.cut {
		return nil // empty or torn, or too long for a meta line: nothing to check
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

// replay rebuilds the state from r[0:end], reading backwards. It keeps the headers of the
// chain lines it passes (and the raw lines of the chain from the newest entry, which is all it
// needs on a sound file) and stops at a compaction boundary on that chain, whose Metadata
// stands in for everything older. Then it picks the leaf and the chain by the rule in
// SCHEMA.md — leaf, if the file has it, is the entry to resume at — and decodes the chain.
// A file whose links need repair (a uuid on two lines) is scanned whole.
func replay(ctx context.Context, r io.ReaderAt, end int64, leaf string) (*State, error) {
	sc := &replayScan{st: &State{Metadata: map[Type]json.RawMessage{}}, g: newGraph(), meta: map[Type]metaLine{}, end: end, leaf: leaf}
	if err := scanBackward(ctx, r, end, sc.line); err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	st := sc.st
	var (
		boundary int
		err      error
	)
	st.Leaf, boundary, err = decodeChain(r, st, sc.g, leaf)
	if err != nil {
		return nil, err
	}
	sc.settleMetadata(boundary)
	if err := resolveStarts(r, st, sc.starts); err != nil {
		return nil, err
	}
	return st, nil
}

// replayScan is what replay gathers reading the file backwards, newest line first.
type replayScan struct {
	st   *State
	g    *graph
	meta map[Type]metaLine
	end  int64
	leaf string

	starts    map[string][]span
	order     int
	leafKnown bool // the provisional chain: from the newest chain line or rewind
	chainDone bool
	wanted    string
}

// line takes one line (at off; owned says the scanner gave up its buffer).
func (sc *replayScan) line(line []byte, off int64, owned bool) error {
	sc.st.Scanned = sc.end - off
	o := sc.order
	sc.order++
	h, err := parseHeader(line)
	if err != nil {
		sc.st.BadLines++
		return nil
	}
	switch kindOf(h.Type) {
	case kindToolStarted:
		if sc.starts == nil {
			sc.starts = map[string][]span{}
		}
		sc.starts[h.Parent] = append(sc.starts[h.Parent], span{off, len(line)})
	case kindCleared:
		if !sc.st.addCleared(line) {
			sc.st.BadLines++
		}
	case kindMeta:
		if sc.st.SessionID == "" {
			var e Entry
			if json.Unmarshal(line, &e) == nil {
				sc.st.SessionID = e.SessionID
			}
		}
	case kindRewind:
		sc.rewind(line, o)
	case kindMetadata:
		if _, ok := sc.meta[h.Type]; !ok {
			var e Entry
			if err := json.Unmarshal(line, &e); err != nil {
				sc.st.BadLines++
				return nil
			}
			sc.meta[h.Type] = metaLine{order: o, value: e.Value}
		}
	case kindChain, kindUnknown:
		return sc.chain(h, line, off, owned, o)
	}
	return nil
}

// rewind takes the newest rewind line: it names the leaf, unless a newer chain line did.
func (sc *replayScan) rewind(line []byte, o int) {
	if sc.g.rewindOrder >= 0 {
		return
	}
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		sc.st.BadLines++
		return
	}
	sc.g.rewindOrder, sc.g.rewindLeaf = o, e.LeafUUID
	if !sc.leafKnown {
		sc.leafKnown, sc.wanted, sc.chainDone = true, e.LeafUUID, e.LeafUUID == ""
	}
}

// chain adds an entry (of a known or unknown type) to the graph, and keeps the lines of the
// provisional chain; it stops the scan at a summary that ends a clean chain.
func (sc *replayScan) chain(h header, line []byte, off int64, owned bool, o int) error {
	g := sc.g
	keep := func() []byte {
		if owned {
			return line
		}
		return slices.Clone(line)
	}
	unknown := kindOf(h.Type) == kindUnknown
	if h.UUID == "" {
		if unknown {
			u := &node{off: off, size: len(line), order: o, newest: o}
			g.raw[u] = keep()
			g.unknowns = append(g.unknowns, u)
		}
		return nil
	}
	n, dup := g.add(&node{id: idOf(h.UUID), parent: idOf(h.Parent), hasParent: h.Parent != "", kind: nodeKindOf(h.Type),
		off: off, size: len(line), order: o, newest: o})
	if dup {
		return nil // an older copy of an entry: the newest line is its content
	}
	if unknown {
		g.raw[n] = keep()
		g.unknowns = append(g.unknowns, n)
	}
	if !sc.leafKnown && !unknown {
		sc.leafKnown, sc.wanted = true, h.UUID
	}
	if !sc.leafKnown || sc.chainDone || h.UUID != sc.wanted {
		return nil
	}
	if _, held := g.raw[n]; !held {
		g.raw[n] = keep()
	}
	sc.wanted = h.Parent
	sc.chainDone = sc.wanted == ""
	if h.Type == TypeSummary && sc.leaf == "" && g.repairs.Duplicates == 0 && g.repairs.SharedIDs == 0 {
		return errStop
	}
	return nil
}

// settleMetadata keeps the newest value of each metadata type not older than the chain's
// compaction boundary (order boundary, -1 without one); the boundary's own snapshot fills in
// what the newer lines do not say.
func (sc *replayScan) settleMetadata(boundary int) {
	if b, ok := sc.st.Boundary(); ok {
		for t, v := range b.Metadata {
			if m, ok := sc.meta[t]; !ok || m.order > boundary {
				sc.meta[t] = metaLine{order: boundary, value: v}
			}
		}
	}
	for t, m := range sc.meta {
		if boundary < 0 || m.order <= boundary {
			sc.st.Metadata[t] = m.value
		}
	}
}

// decodeChain resolves the graph and decodes the chain into st (oldest first), with the
// unknown lines newer than its boundary; it returns the leaf and the boundary's order (-1
// without one).
func decodeChain(r io.ReaderAt, st *State, g *graph, want string) (leaf string, oldest int, err error) {
	start, chain, orphan, branches := g.resolve(want)
	for i, tip := range branches {
		g.repairs.Branches[i].Leaf = g.header(r, tip).UUID
	}
	switch {
	case start != nil && want != "" && idOf(want) == start.id:
		leaf = want
	case start != nil:
		leaf = g.header(r, start).UUID
	case g.rewindOrder >= 0:
		leaf = g.rewindLeaf // a rewind to before the first entry, or to one the file lacks
		st.Dangling = leaf
	}
	if orphan != nil {
		h := g.header(r, orphan)
		g.repairs.Orphan, st.Dangling = h.UUID, h.Parent
	}
	st.Repairs = g.repairs
	oldest = -1
	if n := len(chain); n > 0 && chain[n-1].kind == nodeSummary {
		oldest = chain[n-1].order
	}
	// Unknown lines come in file order among the chain's entries, for Fork.
	unknowns := slices.DeleteFunc(slices.Clone(g.unknowns), func(u *node) bool {
		return oldest >= 0 && u.order > oldest
	})
	slices.Reverse(unknowns)
	st.Chain = make([]Entry, 0, len(chain))
	for i := len(chain) - 1; i >= 0; i-- {
		n := chain[i]
		for len(unknowns) > 0 && unknowns[0].order > n.order {
			st.Unknown = append(st.Unknown, g.raw[unknowns[0]])
			st.unknownAt = append(st.unknownAt, len(st.Chain))
			unknowns = unknowns[1:]
		}
		if !n.isChain() {
			continue // its line is among the unknown ones
		}
		line := g.raw[n]
		if line == nil {
			line = make([]byte, n.size)
			if _, err := r.ReadAt(line, n.off); err != nil {
				return "", 0, fmt.Errorf("read entry at %d: %w", n.off, err)
			}
		}
		delete(g.raw, n) // let the raw bytes go as they are decoded
		e, err := decodeEntry(line)
		if err != nil || kindOf(e.Type) != kindChain {
			st.BadLines++ // a damaged line on the chain: skip it, keep the rest
			continue
		}
		if st.SessionID == "" {
			st.SessionID = e.SessionID
		}
		st.Chain = append(st.Chain, e)
	}
	for _, u := range unknowns {
		st.Unknown = append(st.Unknown, g.raw[u])
		st.unknownAt = append(st.unknownAt, len(st.Chain))
	}
	return leaf, oldest, nil
}
