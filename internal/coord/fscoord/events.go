package fscoord

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/keel-dev/keel/internal/coord"
)

// Event logs. events/<member>.log holds a member's newest entries, one JSON line each
// ({"seq","time","data"}); events/<member>.log.1 the ones before. An append that leaves the
// log with half the entry budget, or rotateBytes, renames it over .1, so a member keeps at most
// the budget. Appends hold events/<member>.lock (flock) and write all of a call's lines with
// one write(2). Lines are not synced: a log is a view of work whose record is the member's
// transcript. A torn last line (a crash mid-write) is skipped by readers and ended by the
// next append.

// rotateBytes caps one log file, whatever its entries' count.
const rotateBytes = 2 << 20

type events struct {
	b *Backend

	// mu guards tails, cursors and locks: what this handle knows of each member's current
	// file, as its appender (the last sequence, to continue from) and as its reader (how far
	// it read), and the logs' locks it keeps open.
	mu      sync.Mutex
	tails   map[string]tail
	cursors map[string]cursor
	locks   map[string]*fileLock
}

// lock returns member's log lock at path, kept open for the handle's next appends.
func (e *events) lock(member, path string) *fileLock {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := e.locks[member]; l != nil {
		return l
	}
	l := newLock(path)
	e.locks[member] = l
	return l
}

func (e *events) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, l := range e.locks {
		errs = append(errs, l.close())
	}
	e.locks = map[string]*fileLock{}
	return errors.Join(errs...)
}

var _ coord.Events = (*events)(nil)

// tail is the current file of a log as this handle last appended to it.
type tail struct {
	file  os.FileInfo
	size  int64
	seq   uint64
	count int
}

// cursor is how far this handle read a log's current file: up to off, last entry seq.
type cursor struct {
	file os.FileInfo
	off  int64
	seq  uint64
}

func newEvents(b *Backend) *events {
	return &events{b: b, tails: map[string]tail{}, cursors: map[string]cursor{}, locks: map[string]*fileLock{}}
}

// Events returns the team's event logs.
func (b *Backend) Events() coord.Events { return b.events }

func (e *events) paths(member string) (cur, prev, lock string) {
	dir := e.b.path("events")
	return filepath.Join(dir, member+".log"), filepath.Join(dir, member+".log.1"), filepath.Join(dir, member+".lock")
}

func (e *events) Append(ctx context.Context, member string, data ...json.RawMessage) error {
	if err := e.b.live(ctx, "append events"); err != nil {
		return err
	}
	if err := coord.CheckEntries(member, data, e.b.cfg.Limits); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	cur, _, lock := e.paths(member)
	if err := os.MkdirAll(filepath.Dir(cur), 0o700); err != nil {
		return fmt.Errorf("append events of %s: %w", member, err)
	}
	return e.lock(member, lock).with(ctx, func() error {
		// A file takes what fits before it is rotated; the rest goes into the next one.
		for len(data) > 0 {
			n, err := e.appendSome(member, data)
			if err != nil {
				return fmt.Errorf("append events of %s: %w", member, err)
			}
			data = data[n:]
		}
		return nil
	})
}

// appendSome appends as many of data as the current file takes before it is rotated, with
// one write, and rotates it when it is full. It returns how many it appended. The caller holds
// the log's lock.
func (e *events) appendSome(member string, data []json.RawMessage) (int, error) {
	cur, prev, _ := e.paths(member)
	f, err := os.OpenFile(cur, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	e.mu.Lock()
	t, known := e.tails[member]
	e.mu.Unlock()
	var buf bytes.Buffer
	if !known || !os.SameFile(t.file, st) || t.size != st.Size() {
		// Someone else appended, or rotated: find where the log stands.
		last, count, ended := scanLog(cur)
		if count == 0 {
			last, _, _ = scanLog(prev)
		}
		t = tail{file: st, size: st.Size(), seq: last, count: count}
		if !ended {
			buf.WriteByte('\n') // end a torn line, so the next one starts clean
		}
	}
	half := max(e.b.cfg.Limits.EventEntries/2, 1)
	now := e.b.cfg.Now()
	n := 0
	for _, d := range data {
		if t.count >= half || t.size+int64(buf.Len()) >= rotateBytes {
			break
		}
		t.seq++
		t.count++
		line, err := json.Marshal(coord.Entry{Seq: t.seq, Time: now, Data: d})
		if err != nil {
			return 0, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
		n++
	}
	if buf.Len() > 0 {
		if _, err := f.Write(buf.Bytes()); err != nil {
			return 0, err
		}
		t.size += int64(buf.Len())
	}
	if t.count >= half || t.size >= rotateBytes {
		if err := os.Rename(cur, prev); err != nil {
			return 0, fmt.Errorf("rotate: %w", err)
		}
		e.mu.Lock()
		delete(e.tails, member) // the next append starts a new file and finds the sequence in .1
		e.mu.Unlock()
		return n, nil
	}
	e.mu.Lock()
	e.tails[member] = t
	e.mu.Unlock()
	return n, nil
}

// scanLog reads a log file for its last entry's sequence and its count of entries, and says
// whether it ends with a whole line (a missing file does).
func scanLog(path string) (last uint64, count int, ended bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, true
	}
	defer f.Close()
	ended = true
	_, _ = readLines(f, 0, func(line []byte, _ int64) bool {
		var en coord.Entry
		if json.Unmarshal(line, &en) == nil && en.Seq > 0 {
			last = max(last, en.Seq)
			count++
		}
		return true
	}, func() { ended = false })
	return last, count, ended
}

// readLines calls fn with every whole line of r from offset off on and the offset after it,
// until fn returns false; torn is called when the data ends in a partial line. It returns the
// offset after the last line fn took.
func readLines(r io.ReaderAt, off int64, fn func(line []byte, next int64) bool, torn func()) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, off, 1<<62), 64<<10)
	pos := off
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			pos += int64(len(line))
			if !fn(line[:len(line)-1], pos) {
				return pos, nil
			}
			continue
		}
		if len(line) > 0 && torn != nil {
			torn()
		}
		if errors.Is(err, io.EOF) {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
	}
}

func (e *events) Read(ctx context.Context, member string, after uint64, limit int) ([]coord.Entry, error) {
	if err := e.b.live(ctx, "read events"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	cur, prev, _ := e.paths(member)
	var out []coord.Entry
	take := func(line []byte) bool {
		var en coord.Entry
		if json.Unmarshal(line, &en) != nil || en.Seq <= after {
			return true // a torn line, or one read before
		}
		out = append(out, en)
		return limit <= 0 || len(out) < limit
	}
	f, err := os.Open(cur)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read events of %s: %w", member, err)
	}
	var st os.FileInfo
	if f != nil {
		defer f.Close()
		if st, err = f.Stat(); err != nil {
			return nil, fmt.Errorf("read events of %s: %w", member, err)
		}
	}
	e.mu.Lock()
	c, ok := e.cursors[member]
	e.mu.Unlock()
	from := int64(0)
	if ok && st != nil && os.SameFile(c.file, st) && c.seq == after && c.off <= st.Size() {
		from = c.off // where this handle's last read of this file stopped
	} else if pf, err := os.Open(prev); err == nil {
		more := true
		_, err := readLines(pf, 0, func(line []byte, _ int64) bool { more = take(line); return more }, nil)
		pf.Close()
		if err != nil {
			return nil, fmt.Errorf("read events of %s: %w", member, err)
		}
		if !more {
			return out, nil
		}
	}
	if f == nil {
		return out, nil
	}
	end, err := readLines(f, from, func(line []byte, _ int64) bool { return take(line) }, nil)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", member, err)
	}
	seq := after
	if len(out) > 0 {
		seq = out[len(out)-1].Seq
	}
	e.mu.Lock()
	e.cursors[member] = cursor{file: st, off: end, seq: seq}
	e.mu.Unlock()
	return out, nil
}

func (e *events) Last(ctx context.Context, member string) (uint64, error) {
	if err := e.b.live(ctx, "read events"); err != nil {
		return 0, err
	}
	if err := coord.CheckName(member); err != nil {
		return 0, fmt.Errorf("read events: %w", err)
	}
	cur, prev, _ := e.paths(member)
	last, count, _ := scanLog(cur)
	if count == 0 {
		last, _, _ = scanLog(prev)
	}
	return last, nil
}

func (e *events) Watch(ctx context.Context, member string) (<-chan struct{}, error) {
	if err := e.b.live(ctx, "watch events"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("watch events: %w", err)
	}
	cur, prev, _ := e.paths(member)
	names := map[string]bool{filepath.Base(cur): true, filepath.Base(prev): true}
	return e.b.hub.watch(ctx, func(name string) bool { return names[name] }, filepath.Dir(cur))
}
