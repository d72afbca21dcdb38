package builtin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/shell"
)

// grepBlock is one file's part of Grep's answer: its output lines as they are shown (content
// mode: its matching and context lines, "--" between distant ones; files_with_matches: the
// path; count: path:count) and what it found.
type grepBlock struct {
	path  string
	lines []string
	// chars is the length of lines, a newline after each.
	chars int
	// matches counts the file's matches; lineCount its output lines, those past the per-file
	// limit included (counted, not kept).
	matches, lineCount int
	// partial is set when the file was not read to its end (its block could not be shown in
	// full anyway): matches and lineCount are lower bounds.
	partial bool
}

// grepAnswer gathers the blocks Grep's engines find, in any order and from any goroutine,
// and keeps only those that can still be shown: the output is sorted by path and cut at
// maxGrepOutput characters (or head_limit lines), so once the blocks with the smallest paths
// fill it, a block sorting after them is counted and dropped. Memory stays bounded by the
// answer, however much the search finds.
type grepAnswer struct {
	mode      string
	sep       bool // context lines asked for: "--" between files
	maxChars  int
	headLimit int
	// show filters what an engine found: the gate's deny rules, ripgrep's positive glob.
	show func(path string) bool

	// mu guards the fields below.
	mu sync.Mutex
	// kept is sorted by path; keptChars and keptLines are its length as shown.
	kept                 []grepBlock
	keptChars, keptLines int
	// full is set when kept fills the output: a path after its last cannot be shown.
	full bool
	// files, matches and lines count every block found, kept or not.
	files, matches, lines int
	// partial is set when some count is a lower bound (see grepBlock.partial).
	partial bool
	// cutMultiline counts files searched only in their first maxMultilineBytes.
	cutMultiline int
}

func newGrepAnswer(q grepQuery, headLimit int, show func(string) bool) *grepAnswer {
	return &grepAnswer{mode: q.mode, sep: q.before > 0 || q.after > 0, maxChars: maxGrepOutput, headLimit: headLimit, show: show}
}

// blockLimits are the most one file's block can usefully hold: past them it cannot be shown
// whole even as the first, so it keeps no more lines.
func (a *grepAnswer) blockLimits() (chars, lines int) {
	lines = -1
	if a.headLimit > 0 {
		lines = a.headLimit
	}
	return a.maxChars, lines
}

// maxFileMatches is how many matches of one file an engine reads in content mode: each adds
// a line to the file's block, and a line holds at least the file's path (no shorter than the
// root) and a separator, so a file with more could not be shown whole anyway. The search
// stops a file there, after the context of its last match.
func (a *grepAnswer) maxFileMatches(root string) int {
	chars, lines := a.blockLimits()
	n := chars/(len(root)+2) + 1
	if lines >= 0 {
		n = min(n, lines)
	}
	return max(n, 1)
}

// cutFile counts a file a multiline search read only in part.
func (a *grepAnswer) cutFile() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cutMultiline++
}

func (a *grepAnswer) add(b grepBlock) {
	if a.show != nil && !a.show(b.path) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.files++
	a.matches += b.matches
	a.lines += b.lineCount
	a.partial = a.partial || b.partial
	i, _ := slices.BinarySearchFunc(a.kept, b.path, func(k grepBlock, p string) int { return strings.Compare(k.path, p) })
	if a.full && i == len(a.kept) {
		return
	}
	a.kept = slices.Insert(a.kept, i, b)
	a.keptChars += b.chars
	a.keptLines += len(b.lines)
	if a.sep && len(a.kept) > 1 {
		a.keptChars += 3
		a.keptLines++
	}
	a.trim()
}

// trim drops the blocks after the one that fills the output.
func (a *grepAnswer) trim() {
	for len(a.kept) > 1 {
		last := a.kept[len(a.kept)-1]
		chars, lines := a.keptChars-last.chars, a.keptLines-len(last.lines)
		if a.sep {
			chars, lines = chars-3, lines-1
		}
		if !a.over(chars, lines) {
			break
		}
		a.kept[len(a.kept)-1] = grepBlock{}
		a.kept = a.kept[:len(a.kept)-1]
		a.keptChars, a.keptLines = chars, lines
	}
	a.full = a.over(a.keptChars, a.keptLines)
}

// over reports whether output of this length fills the answer: nothing after it is shown.
func (a *grepAnswer) over(chars, lines int) bool {
	return chars > a.maxChars || (a.headLimit > 0 && lines >= a.headLimit)
}

// String renders the answer: a header in files_with_matches and count modes, the lines, and
// a note saying what was cut and how much was left out.
func (a *grepAnswer) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	if a.files == 0 {
		b.WriteString("No matches found.\n")
		return a.withNotes(&b)
	}
	var out []string
	for i, b := range a.kept {
		if i > 0 && a.sep {
			out = append(out, "--")
		}
		out = append(out, b.lines...)
	}
	total := a.lines
	if a.sep {
		total += a.files - 1
	}
	of := strconv.Itoa(total)
	if a.partial {
		of = "at least " + of
	}
	switch a.mode {
	case "files_with_matches":
		fmt.Fprintf(&b, "Found %s\n", plural(a.files, "file"))
	case "count":
		fmt.Fprintf(&b, "Found %s in %s\n", plural(a.matches, "match"), plural(a.files, "file"))
	}
	shown := len(out)
	if a.headLimit > 0 && a.headLimit < shown {
		shown = a.headLimit
	}
	for i, line := range out[:shown] {
		if b.Len()+len(line) > a.maxChars {
			fmt.Fprintf(&b, "[Output cut at %d chars after %d of %s lines. Narrow the search (path, glob, type) or use head_limit.]\n", a.maxChars, i, of)
			return a.withNotes(&b)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if shown < total {
		fmt.Fprintf(&b, "[Showing %d of %s lines (head_limit).]\n", shown, of)
	}
	return a.withNotes(&b)
}

func (a *grepAnswer) withNotes(b *strings.Builder) string {
	if a.cutMultiline > 0 {
		fmt.Fprintf(b, "[Multiline: %s over %d MiB searched only in the first %d MiB.]\n", plural(a.cutMultiline, "file"), maxMultilineBytes>>20, maxMultilineBytes>>20)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// blockBuilder formats one file's content-mode lines into its block, keeping them up to the
// block limits and counting the rest.
type blockBuilder struct {
	block    grepBlock
	lineNums bool
	sep      bool
	maxChars int
	maxLines int // -1: no limit
	prev     int // number of the previous line added
}

func newBlockBuilder(path string, q grepQuery, lineNums bool, a *grepAnswer) *blockBuilder {
	maxChars, maxLines := a.blockLimits()
	return &blockBuilder{block: grepBlock{path: path}, lineNums: lineNums, sep: q.before > 0 || q.after > 0, maxChars: maxChars, maxLines: maxLines}
}

// full reports whether the block holds all it can show.
func (bb *blockBuilder) full() bool {
	return bb.block.chars > bb.maxChars || (bb.maxLines >= 0 && len(bb.block.lines) >= bb.maxLines)
}

// add adds line num, whose text (without its newline) is text, or its first bytes when the
// line is size bytes long; size < 0 means unknown.
func (bb *blockBuilder) add(num int, text []byte, size int, match bool) {
	if bb.prev > 0 && num > bb.prev+1 && bb.sep {
		bb.keep("--")
	}
	bb.prev = num
	if bb.full() {
		bb.block.lineCount++ // counted, not shown: no need to format it
		return
	}
	sep := "-"
	if match {
		sep = ":"
	}
	// What a terminal would show of the line (no colour codes, no redrawn progress).
	shown := shell.CleanLine(truncateLine(text, size))
	if bb.lineNums {
		bb.keep(bb.block.path + sep + strconv.Itoa(num) + sep + shown)
	} else {
		bb.keep(bb.block.path + sep + shown)
	}
}

// keep adds a line to the block, or only counts it once the block is full.
func (bb *blockBuilder) keep(line string) {
	bb.block.lineCount++
	if bb.full() {
		return
	}
	bb.block.lines = append(bb.block.lines, line)
	bb.block.chars += len(line) + 1
}

// summaryBlock is a file's block in files_with_matches and count modes.
func summaryBlock(mode, path string, matches int) grepBlock {
	line := path
	if mode == "count" {
		line = path + ":" + strconv.Itoa(matches)
	}
	return grepBlock{path: path, lines: []string{line}, chars: len(line) + 1, matches: matches, lineCount: 1}
}
