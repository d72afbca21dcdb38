package transcript

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
)

// Repairs says what replay found wrong with the parent links of a transcript and how it read
// the conversation anyway (the rule is in SCHEMA.md, "Repairs"). The zero value means nothing
// was wrong.
type Repairs struct {
	// Duplicates counts lines that repeat an earlier line's uuid and parentUuid: the same
	// entry written again, read as one entry with the newest line's content.
	Duplicates int
	// SharedIDs counts lines that reuse an earlier entry's uuid under another parent: a
	// different entry, which the entries after it link to.
	SharedIDs int
	// Cycles counts parent links that led back onto the resumed chain; the chain starts at
	// the entry whose link closed the loop.
	Cycles int
	// Orphan names the resumed chain's oldest entry when its parent is not in the file (see
	// State.Dangling): what came before it is lost.
	Orphan string
	// Branches are the conversations the resumed one does not continue and no rewind left,
	// newest first; each is reachable by naming its Leaf to resume at.
	Branches []Branch
	// Unreachable counts entries on no branch at all (a loop of parent links away from the
	// resumed chain).
	Unreachable int
}

// Branch is a conversation in the file that the resumed one does not continue.
type Branch struct {
	// Leaf is its newest entry; Entries and Messages count what it has that the resumed
	// chain does not.
	Leaf              string
	Entries, Messages int
}

// Any reports whether there was anything to repair.
func (r Repairs) Any() bool {
	return r.Duplicates > 0 || r.SharedIDs > 0 || r.Cycles > 0 || r.Orphan != "" || len(r.Branches) > 0 || r.Unreachable > 0
}

// String says what was repaired, for a notice: counts, and how to reach what the resumed
// conversation left aside.
func (r Repairs) String() string {
	if !r.Any() {
		return ""
	}
	var parts []string
	if r.Duplicates > 0 {
		parts = append(parts, fmt.Sprintf("%s repeated an earlier entry (read as one entry, with the newest line's content)", count(r.Duplicates, "line")))
	}
	if r.SharedIDs > 0 {
		parts = append(parts, fmt.Sprintf("%s reused an earlier entry's id for a new entry (links go to the newest earlier line of an id)", count(r.SharedIDs, "line")))
	}
	if r.Cycles > 0 {
		parts = append(parts, fmt.Sprintf("%s of parent links looped back (cut where the loop closed)", count(r.Cycles, "chain")))
	}
	if r.Orphan != "" {
		parts = append(parts, fmt.Sprintf("entry %s names a parent the file does not have (the conversation starts there)", r.Orphan))
	}
	if n := len(r.Branches); n > 0 {
		msgs, entries := 0, 0
		var leaves []string
		for _, b := range r.Branches {
			msgs += b.Messages
			entries += b.Entries
			leaves = append(leaves, b.Leaf)
		}
		parts = append(parts, fmt.Sprintf("%s with %s (%s) not on the resumed conversation: resume one with --resume-session-at %s",
			count(n, "other branch"), count(msgs, "message"), count(entries, "entry"), strings.Join(leaves, " or ")))
	}
	if r.Unreachable > 0 {
		parts = append(parts, fmt.Sprintf("%s on no branch (a loop of parent links)", count(r.Unreachable, "entry")))
	}
	return "the transcript's links needed repair: " + strings.Join(parts, "; ")
}

func count(n int, noun string) string {
	if n != 1 {
		switch {
		case strings.HasSuffix(noun, "ch"):
			noun += "es"
		case strings.HasSuffix(noun, "y"):
			noun = strings.TrimSuffix(noun, "y") + "ies"
		default:
			noun += "s"
		}
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// uid is an entry's uuid in 16 bytes: a canonical UUID's own bytes, any other id's FNV-128a
// hash. Replay keeps one node per chain line of the part of the file it reads, so a node is
// small and holds no strings.
type uid [16]byte

func idOf(s string) uid {
	var u uid
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		hex := s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
		ok := true
		for i := range u {
			hi, lo := unhex(hex[2*i]), unhex(hex[2*i+1])
			if hi < 0 || lo < 0 {
				ok = false
				break
			}
			u[i] = byte(hi<<4 | lo)
		}
		if ok {
			return u
		}
	}
	h := fnv.New128a()
	h.Write([]byte(s))
	h.Sum(u[:0])
	return u
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// nodeKind is what replay needs of an entry's type.
type nodeKind uint8

const (
	nodeUnknown nodeKind = iota // a type this keel does not know: maybe a newer keel's entry
	nodeMessage                 // user, assistant
	nodeSystem
	nodeSummary
)

func nodeKindOf(t Type) nodeKind {
	switch t {
	case TypeUser, TypeAssistant:
		return nodeMessage
	case TypeSystem:
		return nodeSystem
	case TypeSummary:
		return nodeSummary
	}
	return nodeUnknown
}

// node is what replay keeps of a chain line (or a line of an unknown type, which may be a
// chain entry of a newer keel) to link the conversation tree.
type node struct {
	id, parent uid
	hasParent  bool
	kind       nodeKind
	// hasChild: a chain entry continues from it; on: it is on the resumed chain; seen: a
	// branch counted it.
	hasChild, on, seen bool
	// off and size locate the newest line of the entry; order is how many lines are newer
	// than its first line (0: the newest line), newest how many are newer than its last.
	off           int64
	size          int
	order, newest int
	// up is the entry its parentUuid resolves to, set by link; older is the previous entry
	// with the same uuid (an id used twice).
	up, older *node
}

func (n *node) isChain() bool { return n.kind != nodeUnknown }

// graph is the conversation tree of the scanned part of a file.
type graph struct {
	// byID holds the newest entry of each uuid; older ones hang from it by node.older.
	byID  map[uid]*node
	nodes []*node // newest first
	// raw holds the lines replay kept during the scan: the provisional chain's, the unknown
	// ones (newest first in unknowns).
	raw      map[*node][]byte
	unknowns []*node
	// rewind is the newest rewind line: its order and leaf; rewindOrder < 0 without one.
	rewindOrder int
	rewindLeaf  string
	repairs     Repairs
}

func newGraph() *graph {
	return &graph{byID: map[uid]*node{}, raw: map[*node][]byte{}, rewindOrder: -1}
}

// add records a chain or unknown line (lines arrive newest first); it returns the entry, and
// whether the line is an older copy of an entry already recorded (then merged into it).
func (g *graph) add(n *node) (*node, bool) {
	newest := g.byID[n.id]
	for e := newest; e != nil; e = e.older {
		if e.hasParent == n.hasParent && e.parent == n.parent {
			e.order = n.order
			g.repairs.Duplicates++
			return e, true
		}
	}
	if newest == nil {
		g.byID[n.id] = n
	} else {
		g.repairs.SharedIDs++
		last := newest
		for last.older != nil {
			last = last.older
		}
		last.older = n
	}
	g.nodes = append(g.nodes, n)
	return n, false
}

// entry returns the newest entry of id older than order (a line's parent), or, when none is,
// the oldest newer one (a link forward, as only a damaged file has); nil when the file has
// no entry of id.
func (g *graph) entry(id uid, order int) *node {
	var forward *node
	for e := g.byID[id]; e != nil; e = e.older { // newest first
		if e.order > order {
			return e
		}
		forward = e
	}
	return forward
}

// link resolves every entry's parent and marks the entries a chain entry continues from.
func (g *graph) link() {
	for _, n := range g.nodes {
		if !n.hasParent {
			continue
		}
		n.up = g.entry(n.parent, n.order)
		if n.up != nil && n.isChain() {
			n.up.hasChild = true
		}
	}
}

// resolve picks the start of the chain (its newest entry; nil for none) by the rule in
// SCHEMA.md: leaf asks for an entry to resume at; otherwise the newest rewind or the newest
// chain entry nothing continues from, whichever is newer. It returns the chain, newest first,
// and fills the repairs except for the names they hold (see [graph.name]).
func (g *graph) resolve(leaf string) (start *node, chain []*node, orphan *node, branches []*node) {
	g.link()
	if e := g.byID[idOf(leaf)]; leaf != "" && e != nil && e.isChain() {
		start = e
	} else {
		start = g.defaultLeaf()
	}
	for n := start; n != nil; n = n.up {
		if n.on {
			g.repairs.Cycles++
			break
		}
		n.on = true
		chain = append(chain, n)
		if n.kind == nodeSummary {
			break
		}
		if n.up == nil && n.hasParent {
			orphan = n
		}
	}
	branches = g.offChain(chain)
	return start, chain, orphan, branches
}

// defaultLeaf is the newest chain entry nothing continues from (an entry written again under
// its old id has children, so it is not one), or the newest rewind's leaf when that is newer.
func (g *graph) defaultLeaf() *node {
	var tip *node
	for _, n := range g.nodes {
		if n.isChain() && !n.hasChild && (tip == nil || n.newest < tip.newest) {
			tip = n
		}
	}
	if g.rewindOrder >= 0 && (tip == nil || g.rewindOrder < tip.newest) {
		if g.rewindLeaf == "" {
			return nil
		}
		return g.entry(idOf(g.rewindLeaf), g.rewindOrder)
	}
	return tip
}

// offChain counts the chain entries newer than the chain's boundary that the chain leaves
// aside: branches (grouped by their newest entry, which it returns) that no rewind left, and
// entries on none.
func (g *graph) offChain(chain []*node) (tips []*node) {
	oldest := -1 // entries older than the boundary are summarised by it
	if n := len(chain); n > 0 && chain[n-1].kind == nodeSummary {
		oldest = chain[n-1].order
	}
	inRegion := func(n *node) bool { return n.isChain() && !n.on && (oldest < 0 || n.order < oldest) }
	for _, n := range g.nodes {
		if inRegion(n) && !n.hasChild {
			tips = append(tips, n)
		}
	}
	slices.SortFunc(tips, func(a, b *node) int { return a.newest - b.newest })
	var left []*node
	for _, tip := range tips {
		b := Branch{}
		for n := tip; n != nil && inRegion(n) && !n.seen; n = n.up {
			n.seen = true
			b.Entries++
			if n.kind == nodeMessage {
				b.Messages++
			}
		}
		// A branch older than the newest rewind is one a rewind left, on purpose.
		if g.rewindOrder < 0 || g.rewindOrder > tip.newest {
			g.repairs.Branches = append(g.repairs.Branches, b)
			left = append(left, tip)
		}
	}
	for _, n := range g.nodes {
		if inRegion(n) && !n.seen {
			g.repairs.Unreachable++
		}
	}
	return left
}

// header reads the header of n's line back from the file (nodes keep no strings).
func (g *graph) header(r io.ReaderAt, n *node) header {
	for _, size := range []int{min(n.size, 4<<10), n.size} {
		line := make([]byte, size)
		if _, err := r.ReadAt(line, n.off); err != nil {
			break
		}
		if h, err := parseHeader(line); err == nil {
			return h
		}
	}
	return header{UUID: "?", Parent: "?"}
}

// metaLine is the newest line of a metadata type.
type metaLine struct {
	order int
	value json.RawMessage
}
